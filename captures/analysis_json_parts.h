#pragma once
// The pieces of the analysis JSON (analysis_json.h) that other documents of the same run repeat in
// the same form: the method comparison (methods_json.h) writes each method's side, latency and
// per-layer quality with them. NaN/inf numbers are written as null.
#include <vector>

#include <nlohmann/json.hpp>

#include "captures/analysis_json.h"
#include "engine/analysis/paired_result.h"

namespace hipstudio::captures {

// schema, tool, model, device, prompt {text, tokens} and params (HiP's fields of the run's options).
nlohmann::json run_json(const char* schema, const PairedAnalysis& a, const RunInfo& info);
nlohmann::json number_json(double v);
nlohmann::json components_json(const ComponentMs& c);
nlohmann::json latency_json(const LatencyBreakdown& l);
nlohmann::json side_json(const SideResult& s);               // ppl, mean_nll, nll, generated
nlohmann::json layers_json(const std::vector<LayerQuality>& layers);  // per layer: attention, per-head quality

}  // namespace hipstudio::captures
