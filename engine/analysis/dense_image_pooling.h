#pragma once
// The computation behind dense_image_on_device (device_dense_image.h) on tensors of any device, so a
// CPU test checks it against dense_probability_image where CI runs.
#include <ATen/core/Tensor.h>

#include "engine/analysis/device_dense_image.h"

namespace hipstudio {

// q (tokens, d) of one head and k (tokens, d) of its KV head, positions 0..tokens-1 (causal), under
// the layer's attention rule (window, scale, soft-cap).
PooledProbabilities pool_dense_probabilities(const at::Tensor& q, const at::Tensor& k, const hip::AttentionRule& rule,
                                             int max_side);

}  // namespace hipstudio
