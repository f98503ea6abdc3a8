#pragma once
// HiP's hierarchical top-k mask estimation, CPU reference (paper Algorithm 1 with the block
// approximation of section 3.2; exact semantics in docs/ANALYSIS.md). The CUDA kernels must
// produce the same masks; every score goes through dot_f64 (fixed float64 summation order).
//
// Per (head h, query block qb), with N = hi - lo key blocks in the search range (search_range.h):
//  - N <= Kb: every block of [lo, hi) is selected, no iterations.
//  - otherwise Kb initial nodes [lo + floor(j N / Kb), lo + floor((j+1) N / Kb)); while a node holds
//    more than one block, each node [a, b) with b - a >= 2 splits at m = a + floor((b - a) / 2), a
//    one-block node stays one branch; branch [a, b) is represented by block
//    r = a + min(b - a - 1, floor(rho * (b - a))) (rho * (b - a) computed in double) and scored by
//    the max of dot(Q[h, i], K[g, key]) over rows i = row_begin + t * b_sq < row_end and keys
//    key = r * b_k + u * b_sk, u in [0, b_k / b_sk); the Kb best branches (score descending, ties:
//    smaller begin first) become the next nodes. The mask is the ascending list of node starts.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/score_transform.h"
#include "kernels/hip_trace.h"

namespace hipstudio::hip {

// A block-sparse selection for every (head, query block). HiP, the oracle and the random baseline
// all produce one, so sparse attention and the metrics take any of them.
struct MaskResult {
  int64_t heads = 0;                // hq
  int64_t query_blocks = 0;         // ceil(tq / b_q)
  int64_t kb = 0;                   // k / b_k
  std::vector<int32_t> blocks;      // (heads, query_blocks, kb) ascending key blocks, -1 padded
  std::vector<int32_t> counts;      // (heads, query_blocks) valid entries of each blocks row
  std::vector<int64_t> dense_from;  // (query_blocks) first key of the dense window (all heads)
  std::vector<int32_t> iterations;  // (heads, query_blocks) search iterations run (0: N <= Kb)
  std::vector<int64_t> branches;    // (heads, query_blocks) branches scored, summed over iterations

  int64_t index(int64_t h, int64_t qb) const { return h * query_blocks + qb; }
  const int32_t* row(int64_t h, int64_t qb) const { return blocks.data() + index(h, qb) * kb; }
  int32_t count(int64_t h, int64_t qb) const { return counts[index(h, qb)]; }
};

struct TraceRequest {
  int64_t head = 0;
  int64_t query_block = 0;
};

struct MaskOptions {
  std::vector<TraceRequest> trace;  // (head, query block) pairs to trace; only these pay for it
  int threads = 0;                  // 0: all hardware threads; results do not depend on it
  // Branches scored by the transformed logit instead of the raw dot product (the layer's scale
  // and soft-cap, kernels/score_transform.h). Both are monotonic, so the masks are the same as the
  // default's (tests check it); the model's search always ranks raw dot products.
  ScoreTransform score;
};

struct MaskEstimate {
  MaskResult mask;
  std::vector<MaskTrace> traces;  // one per MaskOptions::trace entry, same order
};

// Empty MaskResult of the right shape: blocks all -1, counts/iterations/branches 0, dense_from
// filled from the search ranges. The oracle and the random baseline start from it.
MaskResult make_empty_mask(const AttentionInputs& in, const HipParams& p);

// Masks for every (head, query block). Validates params and inputs (HipParamError,
// AttentionInputError; a trace request outside the shape is an AttentionInputError).
MaskEstimate estimate_masks_reference(const AttentionInputs& in, const HipParams& p, const MaskOptions& opt = {});

// One (head, query block) with its trace, for the GUI: O(Kb log N) branch scores, no full pass.
MaskTrace trace_block_mask(const AttentionInputs& in, const HipParams& p, int64_t head, int64_t query_block);

}  // namespace hipstudio::hip
