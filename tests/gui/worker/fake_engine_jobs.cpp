// A stand-in for app/gui/engine_jobs.cpp (the GUI's LibTorch adapter) so the real Worker can be
// tested without a model: the "analysis" is synthetic Q/K (worker_views.cpp) reached through many
// progress checks with short sleeps between them, and "generation" emits one piece per token. Both
// are pure functions of the request, so a completed run can be compared with a reference.
#include "tests/gui/worker/fake_engine_jobs.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "app/gui/engine_jobs.h"
#include "app/gui/worker.h"

namespace hipstudio::gui {

struct LoadedModel {};

bool cuda_is_available() { return false; }

std::shared_ptr<const LoadedModel> load_model_job(const ModelRequest&, ModelInfo& info) {
  info = fake_analysis(Request{})->model;
  info.display_name = "fake model";
  info.synthetic = false;
  return std::make_shared<LoadedModel>();
}

struct PrefillHandle {};

namespace {
std::atomic<int64_t> prefill_runs{0};
}  // namespace

int64_t fake_prefill_runs() { return prefill_runs.load(); }

PrefillJob prefill_job(const LoadedModel&, const ModelInfo&, const Request& r, const JobProgress& progress) {
  ++prefill_runs;
  for (int i = 0; i < kFakeAnalysisChecks; ++i) {
    if (!progress(static_cast<double>(i) / kFakeAnalysisChecks, "fake prefill step " + std::to_string(i))) throw Cancelled();
    std::this_thread::sleep_for(std::chrono::microseconds(kFakeCheckMicros));
  }
  Request prompt_only = r;
  prompt_only.decode_steps = 0;
  return {std::make_shared<PrefillHandle>(), fake_analysis(prompt_only)};
}

std::shared_ptr<const AnalysisView> rerun_hip_job(PrefillHandle&, const ModelInfo& info, const Request& r,
                                                  const JobProgress& progress) {
  return prefill_job(LoadedModel{}, info, r, progress).view;  // counts as a prefill run
}

bool hip_pending_job(const PrefillHandle&) { return false; }  // the fake's prefill is always whole

std::shared_ptr<const AnalysisView> finish_hip_job(PrefillHandle&, const AnalysisView&, const JobProgress&) {
  throw std::logic_error("the fake prefill leaves no HiP layers");
}

std::shared_ptr<const AnalysisView> decode_job(PrefillHandle&, const AnalysisView& prompt_view, const Request& r,
                                               const JobProgress& progress) {
  for (int i = 0; i < kFakeDecodeChecks; ++i) {
    if (!progress(static_cast<double>(i) / kFakeDecodeChecks, "fake decode step " + std::to_string(i))) throw Cancelled();
    std::this_thread::sleep_for(std::chrono::microseconds(kFakeCheckMicros));
  }
  auto view = std::make_shared<AnalysisView>(prompt_view);
  auto pa = std::make_shared<PairedAnalysis>(*prompt_view.analysis);
  pa->options.decode_steps = r.decode_steps;
  pa->options.hip.refresh_every = r.hip.refresh_every;
  view->prompt_run = prompt_view.analysis;
  view->analysis = pa;
  return view;
}

DeferredLayerViews deferred_views_job(PrefillHandle&, int64_t layer, const std::function<void()>&) {
  throw std::logic_error("the fake prefill defers no views (layer " + std::to_string(layer) + ")");
}

std::optional<DeviceTrace> device_trace_job(const LayerInputs&, const hip::HipParams&, int64_t, int64_t) {
  return std::nullopt;  // the fake's inputs are host arrays: the reference traces them
}

std::optional<PooledProbabilities> device_dense_job(const LayerInputs&, int64_t, int) { return std::nullopt; }

std::optional<AttentionTiming> latency_job(const LoadedModel&, const LayerInputs*, const hip::HipParams&, int64_t,
                                           const std::function<bool()>&) {
  return std::nullopt;  // the fake runs on no device: nothing to time
}

std::optional<hip::ScoreLocality> device_locality_job(const LayerInputs&, int64_t, const std::vector<int64_t>&,
                                                      const hip::LocalityParams&) {
  return std::nullopt;
}

void generate_job(const LoadedModel&, const ModelInfo&, const Request& r,
                  const std::function<bool(const GenerateView&)>& update) {
  GenerateView view;
  view.id = r.generate_id;
  view.running = true;
  for (int side = 0; side < 2; ++side) {
    for (int64_t t = 0; t < r.generate_tokens; ++t) {
      (side == 0 ? view.dense_text : view.hip_text) += fake_piece(side, t);
      ++(side == 0 ? view.dense_tokens : view.hip_tokens);
      if (!update(view)) throw Cancelled();
      std::this_thread::sleep_for(std::chrono::microseconds(kFakeCheckMicros));
    }
  }
  view.running = false;
  update(view);
}

std::shared_ptr<const SweepView> sweep_job(const LoadedModel&, const ModelInfo&, const Request& r, const JobProgress& progress) {
  auto view = std::make_shared<SweepView>();
  view->id = r.sweep_id;
  view->result.field = r.sweep_field;
  for (size_t i = 0; i < r.sweep_values.size(); ++i) {
    if (!progress(static_cast<double>(i) / static_cast<double>(r.sweep_values.size()), "fake sweep value")) throw Cancelled();
    std::this_thread::sleep_for(std::chrono::microseconds(kFakeCheckMicros));
    SweepRow row;
    row.value = r.sweep_values[i];
    row.recall = 1.0 / static_cast<double>(i + 1);  // a pure function of the request
    view->result.rows.push_back(row);
  }
  return view;
}

std::shared_ptr<const AnalysisView> fake_analysis(const Request& r) {
  auto view = std::const_pointer_cast<AnalysisView>(synthetic_analysis(kFakeTokens, r));
  auto pa = std::make_shared<PairedAnalysis>(*view->analysis);
  pa->options.decode_steps = r.decode_steps;
  pa->options.random_seed = r.seed;
  view->analysis = pa;
  view->prompt = r.prompt;
  return view;
}

std::string fake_piece(int side, int64_t token) { return (side == 0 ? " d" : " h") + std::to_string(token); }

}  // namespace hipstudio::gui
