#pragma once
// The paired run: one prompt through the dense model and through the HiP model (same weights, same
// tokens), then greedy decoding on both sides, with every number the GUI, `hipstudio analyze` and
// the captures show. Results are plain data (no tensors) so views and exporters can read them.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/hip_attention.h"
#include "engine/model/model.h"
#include "engine/model/run_cancelled.h"
#include "engine/analysis/paired_result.h"

namespace hipstudio {

// progress(fraction in [0, 1], what) is called between phases; returning false cancels (the call
// then throws RunCancelled).
using AnalysisProgress = std::function<bool(double fraction, const std::string& what)>;

PairedAnalysis run_paired_analysis(std::shared_ptr<const Model> model, const std::string& prompt,
                                   const AnalysisOptions& options, const AnalysisProgress& progress = {});

// Quality of one layer from its post-RoPE Q [n_heads, T, d] and K, V [n_kv_heads, T, d] (any device
// and dtype; float32 copies are made): what HiP, the oracle and the random baseline select.
LayerQuality layer_quality(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const hip::HipParams& params,
                           uint64_t random_seed);

}  // namespace hipstudio
