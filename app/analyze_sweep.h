#pragma once
// `analyze --sweep NAME=V1,V2,...`: the option's parsing and checks, and the sweep run's outputs (the
// table on stdout, sweep_<NAME>.csv and one SVG per metric, the JSON at --json). The computation is
// engine/analysis/sweep.h's, the files app/common/sweep_outputs.h's (the GUI's sweep panel writes the same).
#include <memory>
#include <string>

#include "app/analysis_options.h"
#include "app/cli_paths.h"
#include "engine/analysis/sweep.h"
#include "engine/model/model.h"

namespace hipstudio::app {

// The sweep --sweep names, every value checked as the plain option would check it: a number in the
// flag's range (--topk's for k), then the HiP rules with the other options as given, and --ld against
// the model's full-attention layers (config). InputError naming "--sweep", the field, the value and the fix; before any work.
SweepSpec parse_sweep(const std::string& text, const HipOptions& hip, const ModelConfig& config);

// The folder the sweep's files go to: --sweep-out, else the folder of --json.
std::string sweep_folder(const std::string& sweep_out, const std::string& json_out);
// Adds the sweep's outputs (the folder, and each file in it for a run on `device`) to `paths`.
void add_sweep_paths(CommandPaths& paths, const std::string& sweep_out, const std::string& json_out, hip::HipField field,
                     const std::string& device);

// Writes a finished sweep of `model` under `base`: the table to stdout, the files into `folder`
// (created when missing), the JSON to `json_out` (each path named on stderr).
void write_sweep_outputs(const SweepResult& result, const Model& model, const AnalysisOptions& base,
                         const std::string& folder, const std::string& json_out);

}  // namespace hipstudio::app
