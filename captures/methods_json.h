#pragma once
// The JSON of a method comparison (`hipstudio analyze --methods`, engine/analysis/method_runs.h):
// schema "hipstudio.methods/1", documented in docs/ANALYSIS.md. The run (model, device, prompt,
// the shared budget) and the dense side once; then "methods", keyed by registry name, each with its
// parameters, its side (ppl, per-token NLL, generated tokens), KL(dense || method), top-1 agreement,
// the means over the sparse layers' heads, per-layer per-head recall / mass / output error against
// the oracle, its decode refreshes and its latency. "order" lists the names as --methods gave them.
#include <vector>

#include <nlohmann/json.hpp>

#include "captures/analysis_json.h"
#include "engine/analysis/method_runs.h"

namespace hipstudio::captures {

nlohmann::json methods_to_json(const std::vector<MethodRun>& runs, const RunInfo& info);

}  // namespace hipstudio::captures
