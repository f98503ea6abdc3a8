#pragma once
// The views layer's float64 CPU reference: one layer's masks and quality from host float32 Q/K/V
// (kernels/ reference) under the layer's attention maths (ViewsMath). Exact; the default on the CPU
// and the check for the device implementation (engine/analysis/layer_views_backend.h), which must
// agree with it.
#include <cstdint>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "engine/views/layer_views.h"
#include "kernels/attention_inputs.h"
#include "kernels/attention_metrics.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio {

// The sparse side's mask (`method`'s reference: HiP's search by default), the oracle's and the
// random baseline's (seeded with layer_random_seed(seed, layer)) with both recall tables; `math` is kept with them (the masks rank
// raw dot products, as the forward pass's search does: its scale and cap change none of them). with_oracle false skips the O(T^2 d)
// oracle (and with it the random baseline and recall): has_oracle is then false.
LayerMaskViews reference_layer_masks(const hip::AttentionInputs& in, const hip::HipParams& p, const ViewsMath& math,
                                     uint64_t seed, int64_t layer, int threads = 0, bool with_oracle = true,
                                     const hip::methods::MethodChoice& method = {});

// Per-head quality of `masks` (which must hold the oracle) under masks.math: mean recall over query
// blocks, attention mass kept and output relative error of HiP and of the random baseline. in.v
// must be set. A windowed layer (masks.math.windowed()) gets NaN numbers: HiP does not run there.
// random_scores false: the random baseline's mass and output error are NaN, not computed (its
// recall is kept); for runs that report neither (LayerViewsSetup::random_scores).
LayerQuality reference_layer_quality(const hip::AttentionInputs& in, const LayerMaskViews& masks, int threads = 0,
                                     bool random_scores = true);

// The attention mass of each mask: hip::attention_mass under `math`'s scale and soft-cap. Full
// causal rows only (a windowed layer has no HiP mass to measure: std::logic_error).
std::vector<hip::AttentionMass> reference_attention_mass(const hip::AttentionInputs& in, const hip::HipParams& p,
                                                         const ViewsMath& math,
                                                         const std::vector<const hip::MaskResult*>& masks,
                                                         int threads = 0);

// A layer's quality where HiP does not run (a windowed layer): `heads` heads of NaN numbers.
LayerQuality unmeasured_layer_quality(int64_t layer, int64_t heads, const ViewsMath& math);

// Mean over query blocks per head of a (heads, query_blocks) table.
std::vector<double> per_head_means(const std::vector<double>& per_block, const hip::MaskResult& shape);

}  // namespace hipstudio
