#pragma once
// What the worker publishes and the panels read: immutable, plain data (no LibTorch, no ImGui).
// One Snapshot per frame (Tracy's "one lock per frame"); each view is a shared_ptr<const ...> that
// outlives the snapshot that brought it, so a panel can keep showing the last result, greyed,
// while the next one is computed.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "engine/analysis/attention_timing_result.h"
#include "engine/analysis/method_layer_mask.h"
#include "engine/analysis/paired_result.h"
#include "engine/analysis/sweep_result.h"
#include "engine/offload/offload_result.h"
#include "engine/offload/offload_simulator.h"
#include "kernels/hip_trace.h"
#include "kernels/mask_reference.h"
#include "engine/views/locality_view.h"
#include "engine/views/trace_view.h"
#include "viz/heat_image.h"
#include "viz/plot_data.h"

namespace hipstudio::gui {

struct ModelInfo {
  std::string display_name;   // "stories15M (default)", a path, or "synthetic ..."
  std::string architecture;
  std::string device;         // device_description(): "cpu (2 threads), f32" / "cuda:0 (...), bf16"
  bool on_cuda = false;
  bool cuda_available = false;
  bool synthetic = false;     // random Q/K (frame-stats mode): no model, no quality numbers
  int64_t n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, max_seq_len = 0, vocab = 0;
  // The layers HiP can replace (no sliding window): what l_d counts and is bounded by.
  int64_t full_attention_layers = 0;
  int64_t element_bytes = 4;  // of the run dtype (KV bytes per token per head = head_dim x this)
};

// One layer's views computed after the prefill that deferred them (AnalysisOptions::views_only_layer:
// the viewed layer's come with the prefill, the others' after it, one layer at a time).
struct DeferredLayerViews {
  LayerQuality quality;
  LayerMaskViews masks;
};
// The deferred layers computed so far: replaced, never changed, as layers are added.
using DeferredViews = std::map<int64_t, std::shared_ptr<const DeferredLayerViews>>;

struct AnalysisView {
  std::shared_ptr<const PairedAnalysis> analysis;
  // The prefill this view's prompt results come from, shared by every decode re-run of it (an r_m
  // change makes a new view with the same prompt_run, and the layer views computed from it stay
  // valid); null where `analysis` is its own (a capture, a synthetic run).
  std::shared_ptr<const PairedAnalysis> prompt_run;
  // One per prefill run (a prefill or a HiP-only re-run), kept when the HiP layers above the viewed
  // one complete its prompt results (prompt_run changes, the run and its layer views do not).
  std::shared_ptr<const int> prefill_run;
  const void* prefill_identity() const {
    if (prefill_run) return prefill_run.get();
    return prompt_run ? prompt_run.get() : analysis.get();
  }
  // The prefill's own view: the prompt's results with no decode steps yet (on screen when the
  // decode half after a new prefill is still running, or was cancelled).
  bool prompt_only() const { return prompt_run && prompt_run == analysis; }
  ModelInfo model;                     // the model that produced it
  std::string prompt;
  std::vector<std::string> prompt_tokens;     // (prompt ids) readable pieces, BOS included
  std::vector<std::string> decode_dense_text; // (decode steps) the dense side's greedy tokens
  std::vector<std::string> decode_hip_text;   // (decode steps)
  double prefill_seconds = 0, decode_seconds = 0;  // wall time of the paired run's two halves
  double seconds() const { return prefill_seconds + decode_seconds; }
  int64_t tokens() const { return static_cast<int64_t>(analysis->prompt_ids.size()); }
  // The HiP side's attention inputs of one layer, a view into analysis->inputs; the layer must be
  // one the analysis kept (has_inputs).
  hip::AttentionInputs inputs(int64_t layer) const;
  bool has_inputs(int64_t layer) const { return analysis->find_inputs(layer) != nullptr; }
  // The layer's inputs can be read on the host without waiting for a device-to-host copy (the
  // drawing thread's hover probes ask first; the worker's CPU stages make the copy).
  bool host_ready(int64_t layer) const;
  // The layer's shapes only (data pointers at a dummy): what drawing needs, with no copy.
  hip::AttentionInputs shape(int64_t layer) const;
  // The inputs where they can be read at once, else the shapes (check host_ready before reading).
  hip::AttentionInputs inputs_or_shape(int64_t layer) const { return host_ready(layer) ? inputs(layer) : shape(layer); }
  // The deferred layers' views computed so far, shared by the prefill's view and its decode re-runs.
  std::shared_ptr<const DeferredViews> deferred;
  // A layer's per-head numbers and masks wherever they were computed (with the prefill or after
  // it); null while its views are pending, or (masks) where the run kept none.
  const LayerQuality* layer_quality(int64_t layer) const;
  const LayerMaskViews* layer_masks(int64_t layer) const;
  // The layer's attention rule (window, scale, soft-cap) as the forward pass ran it: what the dense
  // probabilities of every view follow. Plain causal attention outside the analysis' layers.
  ViewsMath layer_math(int64_t layer) const {
    return layer >= 0 && layer < static_cast<int64_t>(analysis->layers.size()) ? analysis->layers[static_cast<size_t>(layer)].math
                                                                              : ViewsMath{};
  }
  // Layers whose views are still pending, ascending.
  std::vector<int64_t> views_pending() const;
  // The analysis with the deferred layers' views in place: what a capture of this run holds.
  std::shared_ptr<const PairedAnalysis> with_deferred_views() const;
};

// All heads of one layer: the views layer's masks (HiP, oracle and random over the prompt, with
// recall; engine/views/layer_views.h) and what the GUI keeps beside them. The CPU oracle costs
// O(T^2 d) per head: above kOracleMaxTokens it is skipped (has_oracle false) and the views say so.
// The views are shared, not copied: at 32k tokens a layer's three mask sets are ~100-200 MB, and
// copying them cost a knob change 0.07-0.14 s. The members below are the shared views' own fields
// under their usual names (references into `views`, which this object keeps alive).
struct LayerMaskSnapshot {
  LayerMaskSnapshot(std::shared_ptr<const LayerMaskViews> shared, std::shared_ptr<const AnalysisView> from)
      : views(std::move(shared)), source(std::move(from)), layer(views->layer), params(views->params),
        hip(views->hip), oracle(views->oracle), random(views->random), has_oracle(views->has_oracle),
        recall(views->recall), random_recall(views->random_recall), math(views->math), method(views->method) {}
  // Another method's mask of the same layer in the sparse side's slot (`hip` and `recall` are the
  // method's, against the layer's oracle), the layer's oracle and random baseline beside it: every
  // canvas draws it as it draws HiP's. The method's mask is shared, not copied.
  LayerMaskSnapshot(std::shared_ptr<const LayerMaskViews> shared, std::shared_ptr<const AnalysisView> from,
                    std::shared_ptr<const MethodLayerMask> method_mask)
      : views(std::move(shared)), source(std::move(from)), selected(std::move(method_mask)), layer(views->layer),
        params(views->params), hip(selected->mask), oracle(views->oracle), random(views->random),
        has_oracle(views->has_oracle), recall(selected->recall), random_recall(views->random_recall), math(views->math),
        method(selected->method.name) {}

  std::shared_ptr<const LayerMaskViews> views;  // points into `source` where the views layer kept them
  std::shared_ptr<const AnalysisView> source;   // keeps the inputs alive
  std::shared_ptr<const MethodLayerMask> selected;  // the method's mask in `hip`'s place, or null: the views' own
  double seconds = 0;
  const int64_t& layer;
  const hip::HipParams& params;
  const hip::MaskResult &hip, &oracle, &random;
  const bool& has_oracle;
  const std::vector<double>&recall, &random_recall;
  const ViewsMath& math;  // the layer's attention rule: what its dense probabilities follow
  const std::string& method;  // the registry name of the mask in `hip`'s slot ("hip" for HiP's)
};

constexpr int64_t kOracleMaxTokens = 8192;  // also bounds the CPU's dense-probability image
constexpr int kDenseImageSide = 1024;        // texels a side of the dense-probability image

// The views layer's trace of one (head, query block) (engine/views/trace_view.h) with what the
// stepper draws from it.
struct TraceView : BlockTraceView {
  int64_t head = 0, query_block = 0;
  std::vector<viz::TraceStep> steps;      // initial nodes, then one per iteration
  std::vector<int32_t> engine_blocks;     // estimate_masks_reference's row for this block (self-test compares)
};

struct DenseView {
  int64_t layer = 0, head = 0;
  viz::HeatGrid probs;  // max-pooled causal softmax probabilities (NaN = future)
  std::string source;   // where it was computed: the device or the CPU reference
  float max_prob = 0;
  float scale_max = 0;  // 99.5th percentile of the pooled values: the colour scale saturates there
};

// The Latency panel's device timing (engine/analysis/attention_timing_result.h); empty on the CPU,
// where HiP runs the float64 reference and no speed is measured.
struct LatencyView {
  std::optional<AttentionTiming> timing;
  int64_t layer = 0;          // the viewed layer when it was requested
  int64_t requested_tokens = 0;  // Request::latency_tokens
};

struct OffloadView {
  offload::OffloadConfig config;
  offload::OffloadResult result;
  std::vector<offload::HitRatioPoint> mask_curve, sparse_curve;  // hit ratio vs bank size
};

struct GenerateView {
  uint64_t id = 0;
  bool running = false;
  std::string device;
  std::string dense_text, hip_text;
  int64_t dense_tokens = 0, hip_tokens = 0;
  double dense_tok_s = 0, hip_tok_s = 0;
  std::string error;
};

// The Sweep panel's result: one row per value, and what every value shared.
struct SweepView {
  uint64_t id = 0;       // the Request::sweep_id it answers
  SweepResult result;
  AnalysisOptions base;  // the settings every value shares (the swept field's own is replaced)
  std::string context;   // app::sweep_context: model, device, T, the settings held (the figures' subtitle)
};

// The Methods panel's result: per method (in the order asked) its summary and its per-layer means;
// the dense side's perplexity once.
struct MethodRow {
  std::string name, title;
  hip::methods::MethodValues values;
  double ppl = 0, kl = 0, top1 = 0;
  double recall = 0, mass = 0, out_rel_err = 0;  // mean over the sparse layers' heads (hip_layer_means.h)
  double prefill_ms = 0;                         // the side's prefill (a CUDA run; the CPU's is the reference's)
  int64_t mask_refreshes = 0;
  std::vector<double> layer_recall, layer_mass, layer_out_rel_err;  // (layers) mean over heads; NaN: dense or windowed
  std::vector<bool> layer_dense;                                    // (layers) the method does not run there
};
struct MethodsView {
  uint64_t id = 0;        // the Request::methods_id it answers
  double dense_ppl = 0, dense_prefill_ms = 0;
  bool timed = false;     // a CUDA run: the prefill times are speeds
  int64_t prompt_tokens = 0;
  std::vector<MethodRow> rows;
};

// The Side by side panel's masks of the viewed layer, one per method it compares (the two pickers
// and the small multiples; Request::compare_methods), each computed once per (method, values,
// layer, run) on the worker and cached there, so switching between them only re-draws.
struct MethodMaskView {
  hip::methods::MethodChoice method;
  std::string title;  // the registry's ("Quest")
  // The method's mask in the sparse side's slot with the layer's oracle and random baseline; null
  // where it could not be computed (`error` says why: no kept inputs, no oracle above the CPU's limit).
  std::shared_ptr<const LayerMaskSnapshot> masks;
  std::string error;
  std::string source;      // where it was selected (MethodLayerMask::source; "the layer views" for reused masks)
  bool device_timing = false;  // `seconds` timed the tensor implementation on a device (CUDA)
  bool reused = false;     // taken from the layer's views (HiP's own mask, the oracle): not timed here
  double seconds = 0;      // the selection's wall time (MethodLayerMask::seconds)
};
struct MethodMasksView {
  int64_t layer = 0;
  std::vector<MethodMaskView> methods;  // in the order asked; those computed so far while the stage runs
  // The view of `name`, or null.
  const MethodMaskView* find(const std::string& name) const {
    for (const MethodMaskView& m : methods)
      if (m.method.name == name) return &m;
    return nullptr;
  }
};

// The worker's stages, in the order it brings them up to date.
// kStageAnalysis is the paired run's prefill half (the prompt's results, which the layer views read);
// kStageDecode its decode half (decode steps, access streams, decode latency), re-run alone when only
// r_m or the number of decode steps changes.
// kStageHipRest runs the HiP layers above the viewed one: the analysis stage stops after the viewed
// layer (its views first), and the metrics, the decode half and the other layers' views wait for it.
// kStageViews computes, in the background, the views of the layers the prefill deferred.
// kStageLatency times the viewed layer's attention (or a "what if" length) with CUDA events.
// kStageSweep runs the Sweep panel's sweep when asked (Request::sweep_id), after the views;
// kStageMethods the Methods panel's comparison (Request::methods_id), likewise.
// kStageMethodMasks the viewed layer's masks of the methods the Side by side panel compares.
enum Stage { kStageModel, kStageAnalysis, kStageHipRest, kStageDecode, kStageMasks, kStageTrace, kStageDense, kStageLocality,
             kStageOffload, kStageLatency, kStageViews, kStageGenerate, kStageSweep, kStageMethods, kStageMethodMasks,
             kStageCount };
const char* stage_name(int stage);
// The stages that run only when a panel asks (Generate, Sweep, Methods: their Request ids); the
// others follow every request, so an idle worker has them fresh.
inline bool stage_on_request(int stage) {
  return stage == kStageGenerate || stage == kStageSweep || stage == kStageMethods;
}

// One paired run's totals for the Latency panel's history.
struct LatencySample {
  double hip_ms = 0, dense_ms = 0, mask_ms = 0, sparse_ms = 0;  // prefill
  double hip_step_ms = 0, dense_step_ms = 0;                      // decode step
  int64_t k = 0, refresh_every = 0, decode_steps = 0;
  // False for a decode-only re-run (r_m or the step count changed): its prefill figures are the
  // earlier prefill's, not a new measurement, and the history plots no prefill point for it.
  bool new_prefill = true;
};
LatencySample latency_sample(const PairedAnalysis& analysis);

struct Snapshot {
  uint64_t version = 0;
  std::shared_ptr<const ModelInfo> model;
  std::shared_ptr<const AnalysisView> analysis;
  std::shared_ptr<const LayerMaskSnapshot> masks;
  std::shared_ptr<const TraceView> trace;
  std::shared_ptr<const DenseView> dense;
  std::shared_ptr<const LocalityView> locality;
  std::shared_ptr<const OffloadView> offload;
  std::shared_ptr<const LatencyView> latency;
  std::shared_ptr<const GenerateView> generate;
  std::shared_ptr<const SweepView> sweep;
  std::shared_ptr<const MethodsView> methods;
  std::shared_ptr<const MethodMasksView> method_masks;
  // Every paired run's latency since the app started, oldest first: appended by the worker as each
  // run finishes, whether or not the Latency panel is open.
  std::shared_ptr<const std::vector<LatencySample>> latency_history;
  std::array<bool, kStageCount> stale{};          // the shown result is not the current request's
  std::array<std::string, kStageCount> error{};   // why a stage failed for the current request
  std::array<double, kStageCount> stage_seconds{}; // wall time of each stage's last completed run
  bool busy = false;        // a stage is running
  int running_stage = -1;
  double fraction = 0;      // progress of the running stage
  std::string what;         // what it is doing
  bool idle() const { return !busy; }
  // The stage's result is the current request's and it did not fail.
  bool fresh(int stage) const { return !stale[stage] && error[stage].empty(); }
};

}  // namespace hipstudio::gui
