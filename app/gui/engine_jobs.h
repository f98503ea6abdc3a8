#pragma once
// The only GUI code that touches the engine (LibTorch): loading a model, the paired analysis and
// generation. This header stays torch-free (the model is an opaque handle) so panels and the
// worker compile fast.
#include <functional>
#include <memory>
#include <string>

#include "app/gui/request.h"
#include "app/gui/results.h"
#include "engine/model/run_cancelled.h"

namespace hipstudio::gui {

struct LoadedModel;  // wraps std::shared_ptr<const Model>

// Throws InputError (bad path, no CUDA, ...) with a message the UI shows.
std::shared_ptr<const LoadedModel> load_model_job(const ModelRequest& request, ModelInfo& info);

// progress(fraction, what) returning false cancels: throws Cancelled, the engine's own cancel.
using JobProgress = std::function<bool(double fraction, const std::string& what)>;
using Cancelled = RunCancelled;

std::shared_ptr<const AnalysisView> analysis_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                                                 const JobProgress& progress);

// Continues the prompt greedily with dense attention, then with HiP; `update` receives the growing
// view after every piece of text and returns false to cancel (throws Cancelled).
void generate_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                  const std::function<bool(const GenerateView&)>& update);

bool cuda_is_available();

}  // namespace hipstudio::gui
