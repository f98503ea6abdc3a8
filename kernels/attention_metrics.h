#pragma once
// How good a block selection is, measured against dense attention (paper section 5, the metrics docs/ANALYSIS.md defines):
//  - attention mass: the share of the dense softmax probability of query i that falls on the keys
//    the sparse attention uses (key_set.h); 1 means nothing was lost;
//  - output error: ||O_sparse - O_dense||_2 / ||O_dense||_2 per head, over (tq, d);
//  - per-head means of per-(head, query block) values such as recall.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"
#include "kernels/score_transform.h"
#include "kernels/sparse_attention_reference.h"

namespace hipstudio::hip {

struct AttentionMass {
  int64_t heads = 0, tq = 0;
  std::vector<double> per_query;  // (heads, tq)
  std::vector<double> per_head;   // (heads) mean over the queries of the head
};

// Mass of each mask in `masks` (HiP, random, oracle, ...), sharing one pass of dense logits:
// result[m] belongs to masks[m]. Dense probabilities: softmax of score_logit(dot_f64) under `score`
// (score_transform.h; the default is dot / sqrt(d)), max-subtracted, float64, over the query's full
// causal rows [0, e] (a sliding-window layer has no HiP mass to measure).
std::vector<AttentionMass> attention_mass(const AttentionInputs& in, const HipParams& p,
                                          const std::vector<const MaskResult*>& masks, int threads = 0,
                                          const ScoreTransform& score = {});

// Relative L2 error per head, (heads). A head whose dense output is all zero gives 0 when the
// sparse output is too, +infinity otherwise. Shapes must match (std::invalid_argument).
std::vector<double> output_relative_error(const AttentionOutput& sparse, const AttentionOutput& dense);

// (query_blocks) 1 where the search range holds more than Kb blocks (HiP actually searched), else 0.
std::vector<char> searched_query_blocks(const AttentionInputs& in, const HipParams& p);

// Mean over the query blocks of each head of per_block (heads, query_blocks) -> (heads). With
// `include` (query_blocks flags, e.g. searched_query_blocks), only flagged blocks count; a head
// with none gives NaN.
std::vector<double> mean_per_head(const std::vector<double>& per_block, int64_t heads, int64_t query_blocks,
                                  const std::vector<char>* include = nullptr);

}  // namespace hipstudio::hip
