#pragma once
// Raw scores dot(q_i, k_j) of a few query rows of one head over their visible keys, computed where a
// CUDA run keeps the layer's tensors: what the score-locality view needs (64 rows), without copying
// the layer to the host. hip::score_locality_of_scores takes them from here; a gpu test compares
// them with the float64 reference's.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/analysis/paired_result.h"

namespace hipstudio {

// Row i: keys [0, queries[i]] (causal prefill: query i sits at position i). float64 products for
// float32 inputs, float32 for bf16/f16. Empty where the inputs are host arrays.
std::optional<std::vector<std::vector<double>>> score_rows_on_device(const LayerInputs& inputs, int64_t head,
                                                                     const std::vector<int64_t>& queries);

}  // namespace hipstudio
