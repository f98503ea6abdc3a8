// A stand-in for app/gui/engine_jobs.cpp (the GUI's LibTorch adapter) so the real Worker can be
// tested without a model: the "analysis" is synthetic Q/K (worker_views.cpp) reached through many
// progress checks with short sleeps between them, and "generation" emits one piece per token. Both
// are pure functions of the request, so a completed run can be compared with a reference.
#include "tests/gui/worker/fake_engine_jobs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "app/gui/engine_jobs.h"
#include "app/gui/worker.h"
#include "kernels/oracle.h"

namespace hipstudio::gui {

struct LoadedModel {};

bool cuda_is_available() { return false; }

std::shared_ptr<const LoadedModel> load_model_job(const ModelRequest&, ModelInfo& info) {
  info = fake_analysis(Request{})->model;
  info.display_name = "fake model";
  info.synthetic = false;
  return std::make_shared<LoadedModel>();
}

// The fake prefill's state: the layered fake's request while the layers above its viewed one wait.
struct PrefillHandle {
  Request request;
  bool pending = false;
};

namespace {
std::atomic<int64_t> prefill_runs{0}, rest_runs{0}, rest_completed{0}, method_mask_runs{0};

bool layered(const Request& r) { return r.prompt.rfind(kFakeLayeredPrompt, 0) == 0; }

void checks(int n, const char* what, const JobProgress& progress) {
  for (int i = 0; i < n; ++i) {
    if (!progress(static_cast<double>(i) / n, std::string(what) + " step " + std::to_string(i))) throw Cancelled();
    std::this_thread::sleep_for(std::chrono::microseconds(kFakeCheckMicros));
  }
}

// A prefill into `handle`: the prompt's results (the layered fake's through the viewed layer).
std::shared_ptr<const AnalysisView> fake_prefill(PrefillHandle& handle, const Request& r, const JobProgress& progress) {
  ++prefill_runs;
  checks(kFakeAnalysisChecks, "fake prefill", progress);
  Request prompt_only = r;
  prompt_only.decode_steps = 0;
  handle.request = prompt_only;
  if (!layered(r)) {
    handle.pending = false;
    return fake_analysis(prompt_only);
  }
  const int64_t viewed = std::clamp<int64_t>(r.layer, 0, kFakeLayers - 1);
  handle.pending = viewed + 1 < kFakeLayers;
  return fake_layered_analysis(prompt_only, handle.pending ? viewed : -1);
}
}  // namespace

int64_t fake_prefill_runs() { return prefill_runs.load(); }
int64_t fake_rest_runs() { return rest_runs.load(); }
int64_t fake_rest_completed() { return rest_completed.load(); }

PrefillJob prefill_job(const LoadedModel&, const ModelInfo&, const Request& r, const JobProgress& progress) {
  auto handle = std::make_shared<PrefillHandle>();
  auto view = fake_prefill(*handle, r, progress);
  return {handle, view};
}

std::shared_ptr<const AnalysisView> rerun_hip_job(PrefillHandle& prefill, const ModelInfo&, const Request& r,
                                                  const JobProgress& progress) {
  return fake_prefill(prefill, r, progress);  // counts as a prefill run
}

bool hip_pending_job(const PrefillHandle& prefill) { return prefill.pending; }

std::shared_ptr<const AnalysisView> finish_hip_job(PrefillHandle& prefill, const AnalysisView& partial, const JobProgress& progress) {
  if (!prefill.pending) throw std::logic_error("the fake prefill is whole");
  ++rest_runs;
  checks(kFakeRestChecks, "fake upper layers", progress);  // a cancel leaves the prefill pending
  auto view = std::make_shared<AnalysisView>(partial);  // as the engine's: the views computed meanwhile stay
  const auto whole = fake_layered_analysis(prefill.request);
  view->analysis = view->prompt_run = whole->analysis;
  prefill.pending = false;
  ++rest_completed;
  return view;
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

std::optional<PooledProbabilities> device_dense_job(const LayerInputs&, const ViewsMath&, int64_t, int) { return std::nullopt; }

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

std::shared_ptr<const MethodsView> methods_job(const LoadedModel&, const ModelInfo&, const Request& r,
                                               const JobProgress& progress) {
  auto view = std::make_shared<MethodsView>();
  view->id = r.methods_id;
  for (size_t i = 0; i < r.methods.size(); ++i) {
    if (!progress(static_cast<double>(i) / static_cast<double>(r.methods.size()), "fake method")) throw Cancelled();
    std::this_thread::sleep_for(std::chrono::microseconds(kFakeCheckMicros));
    MethodRow row;
    row.name = r.methods[i].name;
    row.recall = 1.0 / static_cast<double>(i + 1);  // a pure function of the request
    view->rows.push_back(row);
  }
  return view;
}

MethodLayerMask method_mask_job(const LayerInputs& inputs, const hip::methods::MethodChoice& method, const hip::HipParams& p,
                                const hip::MaskResult* oracle) {
  ++method_mask_runs;
  // The engine's CPU path (the fake's inputs are host arrays): the method's float64 reference.
  const hip::methods::SelectionMethod& m = hip::methods::find_selection_method(method.name);
  hip::methods::validate_choice(method, p);
  const LayerInputArrays& h = inputs.host();
  hip::AttentionInputs a;
  a.q = h.q.data(), a.k = h.k.data();
  a.hq = inputs.heads, a.hkv = inputs.kv_heads, a.tq = inputs.tokens, a.tk = inputs.tokens, a.d = inputs.dim;
  MethodLayerMask out;
  out.method = method;
  out.layer = inputs.layer;
  out.params = p;
  out.mask = hip::methods::select_masks(m, a, hip::methods::choice_context(method, p, inputs.layer));
  if (oracle) out.recall = hip::mask_recall(out.mask, *oracle);
  out.source = "float64 CPU reference";
  std::this_thread::sleep_for(std::chrono::microseconds(kFakeCheckMicros));
  return out;
}

int64_t fake_method_mask_runs() { return method_mask_runs.load(); }

std::shared_ptr<const AnalysisView> fake_analysis(const Request& r) {
  auto view = std::const_pointer_cast<AnalysisView>(synthetic_analysis(kFakeTokens, r));
  auto pa = std::make_shared<PairedAnalysis>(*view->analysis);
  pa->options.decode_steps = r.decode_steps;
  pa->options.random_seed = r.seed;
  view->analysis = pa;
  view->prompt = r.prompt;
  return view;
}

std::shared_ptr<const AnalysisView> fake_layered_analysis(const Request& r, int64_t through_layer) {
  auto view = std::const_pointer_cast<AnalysisView>(fake_analysis(r));
  auto pa = std::make_shared<PairedAnalysis>(*view->analysis);
  pa->inputs.clear();
  pa->layers.assign(static_cast<size_t>(kFakeLayers), LayerQuality{});
  for (int64_t l = 0; l < kFakeLayers; ++l) {
    LayerQuality& q = pa->layers[static_cast<size_t>(l)];
    q.layer = l;
    if (through_layer >= 0 && l > through_layer) {
      q.pending = true;  // not run yet: no inputs, no numbers
      continue;
    }
    q.heads.resize(2);
    Request own = r;
    own.seed = r.seed * 131 + static_cast<uint64_t>(l);
    LayerInputs in = synthetic_analysis(kFakeTokens, own)->analysis->inputs.front();
    in.layer = l;
    pa->inputs.push_back(std::move(in));
  }
  pa->hip_through_layer = through_layer;
  view->analysis = view->prompt_run = pa;
  view->prefill_run = std::make_shared<const int>(0);
  view->model.synthetic = false;
  view->model.n_layers = kFakeLayers;
  return view;
}

std::string fake_piece(int side, int64_t token) { return (side == 0 ? " d" : " h") + std::to_string(token); }

}  // namespace hipstudio::gui
