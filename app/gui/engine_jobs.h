#pragma once
// The only GUI code that touches the engine (LibTorch): loading a model, the paired analysis and
// generation. This header stays torch-free (the model is an opaque handle) so panels and the
// worker compile fast.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "app/gui/request.h"
#include "app/gui/results.h"
#include "engine/analysis/device_dense_image.h"
#include "engine/analysis/device_locality.h"
#include "engine/analysis/device_trace.h"
#include "engine/runtime/run_cancelled.h"

namespace hipstudio::gui {

struct LoadedModel;  // wraps std::shared_ptr<const Model>

// Throws InputError (bad path, no CUDA, ...) with a message the UI shows.
std::shared_ptr<const LoadedModel> load_model_job(const ModelRequest& request, ModelInfo& info);

// progress(fraction, what) returning false cancels: throws Cancelled, the engine's own cancel.
using JobProgress = std::function<bool(double fraction, const std::string& what)>;
using Cancelled = RunCancelled;

// The paired run in the engine's two halves (engine/analysis/paired_analysis.h): the prefill half runs
// both prefills and keeps their KV caches in `PrefillHandle`, so that decode-only settings (r_m,
// decode steps) re-run just the decode half. `view` is the prompt's results, with no decode steps.
struct PrefillHandle;  // wraps the engine's PairedPrefill
struct PrefillJob {
  std::shared_ptr<PrefillHandle> prefill;
  std::shared_ptr<const AnalysisView> view;
};
PrefillJob prefill_job(const LoadedModel& model, const ModelInfo& info, const Request& r, const JobProgress& progress);
// The HiP prefill alone again, for a request that differs from the prefill's only in what the HiP
// side reads (HiP parameters, l_d, seed, viewed layer): the dense prefill and its cache stay. The
// prompt view it returns is the new prompt results'. On a throw the handle decodes no more: drop it.
std::shared_ptr<const AnalysisView> rerun_hip_job(PrefillHandle& prefill, const ModelInfo& info, const Request& r,
                                                  const JobProgress& progress);
// The layers above the viewed one that the prefill left on both sides (the dense ones, then the HiP
// ones; a HiP re-run leaves the HiP ones again): the whole prompt results, equal to an unsplit run's,
// as a copy of `partial` (the prompt's view so far, with the views computed meanwhile). On a throw
// the partial results stay and the job can run again.
bool hip_pending_job(const PrefillHandle& prefill);
std::shared_ptr<const AnalysisView> finish_hip_job(PrefillHandle& prefill, const AnalysisView& partial,
                                                   const JobProgress& progress);
// r.decode_steps steps with r.hip.refresh_every from the end of the prompt: the prompt view's
// results plus the steps. The handle is used by one job at a time (the worker's thread).
std::shared_ptr<const AnalysisView> decode_job(PrefillHandle& prefill, const AnalysisView& prompt_view, const Request& r,
                                               const JobProgress& progress);

// The views of a layer whose views the prefill deferred (the prefill computes the viewed layer's
// only, r.layer when it ran): as the prefill would have computed them, from the layer's kept inputs.
// `checkpoint` runs between the layer's KV groups and may throw (the background stage gives way).
DeferredLayerViews deferred_views_job(PrefillHandle& prefill, int64_t layer, const std::function<void()>& checkpoint = {});

// The Iterations view's trace and oracle scores from the CUDA kernels, where the layer's inputs
// are on the device (engine/analysis/device_trace.h); empty elsewhere (the worker uses the reference).
std::optional<DeviceTrace> device_trace_job(const LayerInputs& inputs, const hip::HipParams& p, int64_t head,
                                            int64_t query_block);

// The dense probability image pooled on the device (engine/analysis/device_dense_image.h), at any
// length; empty where the layer's inputs are on the host (the worker uses the reference).
std::optional<PooledProbabilities> device_dense_job(const LayerInputs& inputs, const ViewsMath& math, int64_t head,
                                                    int max_side);

// The Latency panel's timing (engine/backends/attention_timing.h): the layer's own inputs when
// `tokens` is 0, else random inputs of the model's shapes at `tokens`; empty off CUDA.
// keep_going() false between repeats throws Cancelled.
std::optional<AttentionTiming> latency_job(const LoadedModel& model, const LayerInputs* inputs, const hip::HipParams& p,
                                           int64_t tokens, const std::function<bool()>& keep_going);

// Score locality of a few queries computed on the device (engine/analysis/device_locality.h); empty
// where the layer's inputs are on the host.
std::optional<hip::ScoreLocality> device_locality_job(const LayerInputs& inputs, int64_t head,
                                                      const std::vector<int64_t>& queries, const hip::LocalityParams& lp);

// The Sweep panel's sweep (engine/analysis/sweep.h) of r.sweep_field over r.sweep_values, with r's
// other settings: what `hipstudio analyze --sweep` gives for them. InputError for a refused value.
std::shared_ptr<const SweepView> sweep_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                                           const JobProgress& progress);

// The Methods panel's comparison (engine/analysis/method_comparison.h) of r.methods with r's other
// settings: what `hipstudio analyze --methods` gives for them. InputError for a refused value.
std::shared_ptr<const MethodsView> methods_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                                               const JobProgress& progress);

// One registry method's mask of a kept layer with its recall against `oracle` (the layer views'
// oracle of the same inputs; null: no recall): engine/analysis/method_layer_mask.h, on the device
// where the inputs are and the method has a tensor implementation, else the CPU reference.
MethodLayerMask method_mask_job(const LayerInputs& inputs, const hip::methods::MethodChoice& method, const hip::HipParams& p,
                                const hip::MaskResult* oracle);

// Continues the prompt greedily with dense attention, then with HiP; `update` receives the growing
// view after every piece of text and returns false to cancel (throws Cancelled).
void generate_job(const LoadedModel& model, const ModelInfo& info, const Request& r,
                  const std::function<bool(const GenerateView&)>& update);

bool cuda_is_available();

}  // namespace hipstudio::gui
