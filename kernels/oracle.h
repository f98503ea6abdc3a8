#pragma once
// The exact top-Kb key blocks HiP tries to find, and recall against them.
//
// Oracle block score of key block j for (head h, query block qb): the max of dot(Q[h, i], K[g, key])
// over the same sampled rows as HiP (i = row_begin + t * b_sq < row_end) and EVERY key of the block
// (key in [j b_k, (j+1) b_k), no b_sk stride): the score HiP's representative approximates. The
// oracle keeps the Kb best blocks of the search range [lo, hi) (score descending, ties: smaller
// block first), or all of them when N <= Kb; computed from dense scores, O(T^2) per head.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"

namespace hipstudio::hip {

// Oracle block scores of [lo, hi) for one (head, query block): (hi - lo) values, block lo first.
std::vector<double> oracle_block_scores(const AttentionInputs& in, const HipParams& p, int64_t head,
                                        int64_t query_block);

// Oracle masks for every (head, query block); iterations and branches stay 0.
MaskResult oracle_masks(const AttentionInputs& in, const HipParams& p, int threads = 0);

// |mask ∩ reference| / |reference| per (head, query block), (heads, query_blocks); 1 when the
// reference selection is empty (nothing to find). Shapes must match (std::invalid_argument).
std::vector<double> mask_recall(const MaskResult& mask, const MaskResult& reference);

}  // namespace hipstudio::hip
