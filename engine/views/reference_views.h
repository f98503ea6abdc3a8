#pragma once
// The views layer's float64 CPU reference: one layer's masks and quality from host float32 Q/K/V
// (kernels/ reference). Exact; the default on the CPU and the check for the device implementation
// (engine/analysis/layer_views_backend.h), which must agree with it.
#include <cstdint>

#include "engine/analysis/paired_result.h"
#include "engine/views/layer_views.h"
#include "kernels/attention_inputs.h"

namespace hipstudio {

// HiP's mask (the reference search), the oracle's and the random baseline's (seeded with
// layer_random_seed(seed, layer)) with both recall tables. with_oracle false skips the O(T^2 d)
// oracle (and with it the random baseline and recall): has_oracle is then false.
LayerMaskViews reference_layer_masks(const hip::AttentionInputs& in, const hip::HipParams& p, uint64_t seed,
                                     int64_t layer, int threads = 0, bool with_oracle = true);

// Per-head quality of `masks` (which must hold the oracle): mean recall over query blocks, attention
// mass kept and output relative error of HiP and of the random baseline. in.v must be set.
LayerQuality reference_layer_quality(const hip::AttentionInputs& in, const LayerMaskViews& masks, int threads = 0);

// Mean over query blocks per head of a (heads, query_blocks) table.
std::vector<double> per_head_means(const std::vector<double>& per_block, const hip::MaskResult& shape);

}  // namespace hipstudio
