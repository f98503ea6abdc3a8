#pragma once
// The JSON form of a paired analysis: the schema `hipstudio analyze --json` writes and the capture
// manifest embeds (documented in the README). NaN/inf numbers are written as null.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/analysis/paired_result.h"
#include "engine/offload/offload_simulator.h"

namespace hipstudio::captures {

// Who/what/where of a run, for the JSON and the capture manifest.
struct RunInfo {
  std::string tool_version;
  std::string model;           // display name or path
  std::string architecture;
  std::string device;          // "cpu (1 threads), f32"
  std::string prompt;
};

// `offload` (with the config that produced it) adds the "offload" section when given.
nlohmann::json analysis_to_json(const PairedAnalysis& analysis, const RunInfo& info,
                                const offload::OffloadResult* offload = nullptr,
                                const offload::OffloadConfig* offload_config = nullptr);

}  // namespace hipstudio::captures
