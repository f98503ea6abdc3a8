#pragma once
// Runs a comparison of selection methods (method_runs.h): the dense prefill once, each method's
// sparse side against it (PairedPrefill::rerun_hip from the first HiP layer on), then each side's
// decode steps with its own r_m refreshes.
#include <memory>
#include <string>
#include <vector>

#include "engine/analysis/method_runs.h"
#include "engine/analysis/paired_analysis.h"

namespace hipstudio {

// `methods` in order (at least one, each with resolved values; a bad one is a hip::HipParamError
// naming it before any work), every other setting from `base`. progress reports the fraction of
// the whole comparison; returning false throws RunCancelled. later_inputs false: the methods after
// the first drop their kept layers' Q/K/V (PairedAnalysis::inputs) once their run is done and keep
// their masks (a capture stores the first method's inputs only), so at most two methods' inputs are
// held at once (AnalysisMemoryShape::methods counts that).
std::vector<MethodRun> run_method_comparison(std::shared_ptr<const Model> model, const std::string& prompt,
                                             const AnalysisOptions& base,
                                             const std::vector<hip::methods::MethodChoice>& methods,
                                             const AnalysisProgress& progress = {}, bool later_inputs = true);

}  // namespace hipstudio
