#pragma once
// Where the search of one query block runs (paper section 3.2's first two steps): its query rows, the key blocks
// [lo, hi) that HiP chooses from, and the first key of the dense window. Shared by the HiP
// reference, the oracle, the random baseline and sparse attention, so all of them agree.
#include <cstdint>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"

namespace hipstudio::hip {

struct SearchRange {
  int64_t row_begin = 0;   // first query row of the block: qb * b_q
  int64_t row_end = 0;     // one past the last: min(tq, (qb + 1) * b_q)
  int64_t p0 = 0;          // visible end of the first row (its position; tk - 1 when not causal)
  int64_t lo = 0;          // first key block of the search: sink / b_k
  int64_t hi = 0;          // one past the last: max(lo, floor((p0 + 1 - window) / b_k))
  int64_t dense_from = 0;  // hi * b_k: keys [dense_from, pos_i] are attended densely
  int64_t blocks() const { return hi - lo; }  // N
};

inline int64_t query_blocks(const AttentionInputs& in, const HipParams& p) { return (in.tq + p.b_q - 1) / p.b_q; }

// floor(a / b) for b > 0, also for negative a (C++ division truncates toward zero).
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// hi for a query block whose first row sits at position p0: the first key block of its dense tail
// (a cached decode mask keeps the hi of its refresh; the views compute it per query block).
inline int64_t search_hi(const HipParams& p, int64_t p0) {
  const int64_t lo = p.sink / p.b_k, top = floor_div(p0 + 1 - p.window, p.b_k);
  return top > lo ? top : lo;
}

inline SearchRange search_range(const AttentionInputs& in, const HipParams& p, int64_t qb) {
  SearchRange r;
  r.row_begin = qb * p.b_q;
  r.row_end = r.row_begin + p.b_q < in.tq ? r.row_begin + p.b_q : in.tq;
  r.p0 = visible_end(in, p, r.row_begin);
  r.lo = p.sink / p.b_k;
  r.hi = search_hi(p, r.p0);
  r.dense_from = r.hi * p.b_k;
  return r;
}

}  // namespace hipstudio::hip
