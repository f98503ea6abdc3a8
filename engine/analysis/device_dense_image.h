#pragma once
// The Side by side view's dense probabilities for a layer whose inputs stay on the device: the
// softmax of one head under the layer's attention rule (window, scale, soft-cap), max-pooled on the device into at most max_side x max_side texels, at
// any prompt length (the CPU path stops at a length where O(T^2 d) per head takes seconds). It
// follows dense_probability_image (engine/views/dense_view.h) cell for cell; a gpu test compares.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "kernels/attention_rule.h"

namespace hipstudio {

struct PooledProbabilities {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols): max of the texel's probabilities, NaN where none is visible
};

// Empty where the layer's inputs are host arrays (a CPU run, a capture). float64 for float32
// inputs, float32 for bf16/f16 ones.
std::optional<PooledProbabilities> dense_image_on_device(const LayerInputs& inputs, const hip::AttentionRule& rule,
                                                         int64_t head, int max_side);

}  // namespace hipstudio
