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
// Per layer: attention, per-head quality; with_random false leaves out the random baseline's fields
// (a method comparison reports each side's own numbers; the baseline is the `random` method's entry).
nlohmann::json layers_json(const std::vector<LayerQuality>& layers, bool with_random = true);

}  // namespace hipstudio::captures
