#pragma once
// The pieces every selection method shares: its candidate range in its own block size b, and the
// conversion of a choice of its blocks into the project's mask (hip::MaskResult, in the run's b_k
// blocks), so that sparse attention, recall against the oracle and every view take any method.
//
// Range of query block qb for block size b (HiP's, kernels/search_range.h, with b for b_k):
//   lo = sink / b, hi = max(lo, floor((p0 + 1 - window) / b)), dense_from = hi * b,
// with p0 the visible end of the block's first row. Blocks of [lo, hi) are whole and end at or
// before p0 + 1 - window <= tk. Method block j covers the b_k blocks [j f, (j + 1) f), f = b / b_k;
// those below sink / b_k lie inside the sink (attended anyway) and are dropped, so every mask entry
// lies in HiP's own range [sink / b_k, hi_bk) as the attention kernels expect.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"
#include "kernels/search_range.h"

namespace hipstudio::hip::methods {

struct MethodRange {
  int64_t row_begin = 0, row_end = 0;  // query rows of the block
  int64_t p0 = 0;                      // visible end of the first row
  int64_t lo = 0, hi = 0;              // candidate blocks [lo, hi) of size b
  int64_t dense_from = 0;              // hi * b
  int64_t blocks() const { return hi - lo; }
};

inline MethodRange method_range(const AttentionInputs& in, const HipParams& p, int64_t b, int64_t qb) {
  MethodRange r;
  r.row_begin = qb * p.b_q;
  r.row_end = r.row_begin + p.b_q < in.tq ? r.row_begin + p.b_q : in.tq;
  r.p0 = visible_end(in, p, r.row_begin);
  r.lo = p.sink / b;
  const int64_t top = floor_div(r.p0 + 1 - p.window, b);
  r.hi = top > r.lo ? top : r.lo;
  r.dense_from = r.hi * b;
  return r;
}

// make_empty_mask(in, p) with dense_from from the ranges of block size b (b = b_k: HiP's own).
MaskResult empty_method_mask(const AttentionInputs& in, const HipParams& p, int64_t b);

// Indices into scores[0, n) of the `take` best (score descending, ties: lower index first),
// ascending; all of [0, n) when n <= take.
void top_indices(const double* scores, int64_t n, int64_t take, std::vector<int32_t>& out);

// Writes the method blocks `chosen` (distinct, any order; sorted here) of size b as b_k blocks into
// one mask row of kb entries (ascending, -1 padded, blocks inside the sink dropped) and its count.
void write_method_blocks(const HipParams& p, int64_t b, std::vector<int32_t>& chosen, int32_t* row, int32_t* count,
                         int64_t kb);

}  // namespace hipstudio::hip::methods
