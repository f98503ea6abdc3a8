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
#include "engine/model/memory_estimate.h"
#include "engine/model/model.h"
#include "engine/model/run_cancelled.h"
#include "engine/analysis/paired_result.h"

namespace hipstudio {

// progress(fraction in [0, 1], what) is called between phases; returning false cancels (the call
// then throws RunCancelled).
using AnalysisProgress = std::function<bool(double fraction, const std::string& what)>;

// The memory shape of a paired analysis of `prompt_tokens` (prefill chunks, kept layers): what
// run_paired_analysis plans with, and what `capture` checks before it starts. Fills `extras`'
// hip and kept_layers; the shape points at `extras`.
RunMemoryShape paired_analysis_shape(const Model& model, int64_t prompt_tokens, const AnalysisOptions& options,
                                     AnalysisMemoryShape& extras);

PairedAnalysis run_paired_analysis(std::shared_ptr<const Model> model, const std::string& prompt,
                                   const AnalysisOptions& options, const AnalysisProgress& progress = {});

}  // namespace hipstudio
