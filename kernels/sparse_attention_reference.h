#pragma once
// Block-sparse and dense attention, CPU reference in float64:
//   out_i = sum_j softmax_j(cap(dot(q_i, k_j) * scale)) v_j     (scale 1 / sqrt(d), no cap: ScoreTransform)
// over the attended keys of query i (key_set.h) for sparse attention, over every key in [0, e]
// (e = visible end) for dense attention. Logits use dot_f64; softmax subtracts the max; weights
// and outputs accumulate in float64 in ascending key order.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"
#include "kernels/score_transform.h"

namespace hipstudio::hip {

struct AttentionOutput {
  int64_t heads = 0, tq = 0, d = 0;
  std::vector<double> out;  // (heads, tq, d)
};

// Needs V. The mask must have the shape of make_empty_mask(in, p) (std::invalid_argument).
AttentionOutput sparse_attention_reference(const AttentionInputs& in, const HipParams& p, const MaskResult& mask,
                                           int threads = 0, const ScoreTransform& score = {});

// Needs V; only p.causal is read (keys [0, pos_i] when causal, all keys otherwise).
AttentionOutput dense_attention_reference(const AttentionInputs& in, const HipParams& p, int threads = 0,
                                          const ScoreTransform& score = {});

// Checks that a mask matches the inputs' heads, query blocks and Kb (std::invalid_argument).
void check_mask_shape(const AttentionInputs& in, const HipParams& p, const MaskResult& mask);

}  // namespace hipstudio::hip
