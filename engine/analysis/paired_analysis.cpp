#include "engine/analysis/paired_analysis.h"

#include <cmath>
#include <optional>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/formats/errors.h"
#include "engine/analysis/context_plan.h"
#include "engine/analysis/kept_inputs.h"
#include "engine/runtime/phase_profile.h"
#include "engine/model/kv_cache.h"
#include "engine/model/layer_math.h"
#include "engine/analysis/layer_views_backend.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/analysis/token_metrics.h"
#include "engine/model/transformer.h"

namespace hipstudio {

namespace {

// The layers whose entering streams a HiP prefill with l_d `dense_layers` keeps: the
// kKeptHipEntryStreams up to l_d, from layer 1 on (layer 0's is the embeddings, made again cheaply).
EntryStreams kept_entry_window(int64_t dense_layers, int64_t layers) {
  EntryStreams window;
  window.last_layer = std::min(dense_layers, layers - 1);
  window.first_layer = std::max<int64_t>(1, window.last_layer - kKeptHipEntryStreams + 1);
  return window;
}

void finish_side(SideResult& side) {
  double total = 0;
  for (double v : side.nll) total += v;
  side.mean_nll = side.nll.empty() ? 0.0 : total / static_cast<double>(side.nll.size());
  side.ppl = std::exp(side.mean_nll);
}

// Accumulates per-layer timings of one side and phase into milliseconds.
struct LatencyRecorder {
  std::vector<ComponentMs> layers;
  bool hip_side = false;
  std::vector<char> hip_layer;  // (n_layers) whether HiP replaces the layer (hip_replaces_layer)
  // From the HiP events of the current call, per layer: mask estimation, and the access recording
  // that runs inside the call but is the analysis' bookkeeping, not HiP's cost.
  std::vector<double> mask_seconds, record_seconds;

  explicit LatencyRecorder(int64_t n_layers) : layers(static_cast<size_t>(n_layers)), mask_seconds(n_layers), record_seconds(n_layers) {}

  void on_layer(int64_t l, double attention_s, double other_s) {
    ComponentMs& c = layers[static_cast<size_t>(l)];
    c.other += other_s * 1e3;
    if (!hip_side || !hip_layer[static_cast<size_t>(l)]) {
      c.dense += attention_s * 1e3;
    } else {
      // The backend's own split of its time; host copies and bookkeeping count as sparse attention.
      const double mask_ms = mask_seconds[static_cast<size_t>(l)] * 1e3;
      c.mask += mask_ms;
      c.sparse += std::max(0.0, attention_s * 1e3 - mask_ms - record_seconds[static_cast<size_t>(l)] * 1e3);
    }
  }
};

void store_latency(const LatencyRecorder& prefill, const LatencyRecorder& decode, int64_t steps, LatencyBreakdown& out) {
  out.prefill_layers = prefill.layers;
  out.decode_layers = decode.layers;
  for (ComponentMs& c : out.decode_layers) {
    const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
    c.mask /= n;
    c.sparse /= n;
    c.dense /= n;
    c.other /= n;
  }
  auto sum = [](const std::vector<ComponentMs>& layers) {
    ComponentMs total;
    for (const ComponentMs& c : layers) {
      total.mask += c.mask;
      total.sparse += c.sparse;
      total.dense += c.dense;
      total.other += c.other;
    }
    return total;
  };
  out.prefill = sum(out.prefill_layers);
  out.decode_step = sum(out.decode_layers);
}

void report(const AnalysisProgress& progress, double fraction, const std::string& what) {
  if (progress && !progress(fraction, what)) throw RunCancelled();
}

}  // namespace

RunMemoryShape paired_analysis_shape(const Model& model, int64_t prompt_tokens, const AnalysisOptions& options,
                                     AnalysisMemoryShape& extras) {
  extras.hip = options.hip;
  extras.kept_layers = options.keep_all_layers ? model.config.n_layers : static_cast<int64_t>(options.keep_layers.size());
  RunMemoryShape shape;
  shape.prompt_tokens = prompt_tokens;
  shape.new_tokens = options.decode_steps;
  // One prefill call over the whole prompt on either device: on CUDA the forward pass bounds its
  // activations by blocks of rows (kCudaPrefillRows) and each layer's attention is one causal call;
  // the CPU reference views need the whole layer anyway.
  shape.prefill_chunk = std::max<int64_t>(1, prompt_tokens);
  shape.analysis = &extras;
  return shape;
}

// Everything the two halves share: both sides' models, caches and backends, the prefill's timings,
// and the prompt's results. Heap-held (PairedPrefill::state_), so the callbacks the models and the
// HiP backend keep can point at its members.
struct PairedPrefill::State {
  std::shared_ptr<const Model> model;
  AnalysisOptions options;
  int64_t n = 0;            // prompt tokens
  int64_t decode_room = 0;  // decode steps the caches have room for
  DenseAttention dense_attention;
  std::unique_ptr<HipAttention> hip_attention;  // replaced by rerun_hip (its settings are fixed)
  Transformer dense_model, hip_model;
  KVCache dense_cache, hip_cache;
  LatencyRecorder dense_prefill_time, hip_prefill_time;
  // The recorders the layer timers feed: the prefill's, then each decode() run's own.
  LatencyRecorder* dense_timer = nullptr;
  LatencyRecorder* hip_timer = nullptr;
  AnalysisProgress progress;  // the running half's
  bool prefilling = true;
  int64_t calls = 0;
  double passes = 1;        // layer calls per prefill
  // Prefill: the views layer per layer, the kept layers' inputs (the queries of every chunk,
  // keys/values of the last: all of them; on the run's device in its dtype), and the layer call the observer saw, handed to the
  // views layer from the layer timer, which runs after the layer's timings are taken, so the views'
  // work never counts as HiP's latency.
  std::vector<std::unique_ptr<LayerViewsBackend>> views;  // null for the layers it defers
  // The deferred layers' HiP masks as the forward pass's kernels computed them (undefined on the
  // CPU path, where the reference estimates its own): layer_views reads them later.
  std::vector<at::Tensor> deferred_blocks;
  std::vector<std::vector<at::Tensor>> kept_q;
  std::vector<at::Tensor> kept_k, kept_v;
  LayerViewsChunk pending;
  int64_t pending_layer = -1;
  // Decode: the step being run and the streams its accesses go to.
  DecodeStepRecord* current_step = nullptr;
  AccessStreams* access = nullptr;
  PairedAnalysis prompt;  // built by the prefill, then moved into prompt_result
  std::shared_ptr<PairedAnalysis> prompt_result;  // handed out as const; finish() may move from it
  int32_t dense_next = 0, hip_next = 0;  // both sides' greedy choice after the prompt
  // The dense side's last decode steps: its choice after each and its timings. They depend on
  // neither HiP's settings nor r_m (the dense prefill never re-runs in this object), so a later
  // decode of as many steps replays them instead of running them again (an r_m change at 32k
  // tokens spent a fifth of its time there). The replayed timings are those of the run that
  // measured them, interleaved with that run's HiP steps.
  struct DenseSteps {
    std::vector<int32_t> tokens;
    LatencyRecorder time{0};
  };
  std::optional<DenseSteps> dense_steps;

  State(std::shared_ptr<const Model> m, const AnalysisOptions& o, int64_t capacity)
      : model(std::move(m)),
        options(o),
        hip_attention(std::make_unique<HipAttention>(o.hip, model->config.n_layers)),
        dense_model(model, capacity),
        hip_model(model, capacity),
        dense_cache(model->config, model->run, capacity),
        hip_cache(model->config, model->run, capacity),
        dense_prefill_time(model->config.n_layers),
        hip_prefill_time(hip_recorder()) {}  // model and options are set by now (declared first)

  void prefill();  // of prompt.prompt_ids: the dense side, then hip_prefill()
  // Where a prefill of options stops: after the viewed layer with options.viewed_layer_first (when
  // layers are left above it), else after the last layer.
  int64_t streamed_stop() const {
    const int64_t viewed = options.views_only_layer, layers = model->config.n_layers;
    return options.viewed_layer_first && viewed >= 0 && viewed + 1 < layers ? viewed + 1 : layers;
  }
  // The dense side's layers [first, last) from `input` (the stream entering `first`) into dense_cache,
  // timed into dense_prefill_time; returns the stream entering `last`.
  at::Tensor run_dense_layers(int64_t first, int64_t last, const at::Tensor& input);
  // The dense side's stream entering the first layer a viewed-layer-first prefill left
  // (dense_mid_layer), until finish_dense runs the rest; undefined (-1) when the dense side is whole
  // (dense_hidden holds its last layer's rows). The HiP side is partial while this one is.
  at::Tensor dense_mid;
  int64_t dense_mid_layer = -1;
  // The dense layers the prefill left, into dense_hidden; a no-op when the dense side is whole.
  // Restartable: a throw leaves dense_mid as it was (the retry writes the cache's upper layers again).
  void finish_dense();
  // The HiP side, its views and the prompt's metrics, against dense_hidden: every layer, or from
  // hip_from on (rerun_hip), with `carried` the kept inputs of the layers below it.
  void hip_prefill(const std::vector<LayerInputs>& carried = {});
  // The HiP side's residual streams entering the kKeptHipEntryStreams layers up to l_d (hip_entries[l],
  // l >= 1; undefined where not kept), so that a change of HiP settings re-runs the layers it reaches
  // only (rerun_hip): the layers below l_d are dense on this side, so the stream entering layer
  // m <= l_d depends on the prompt alone, and serves any later run whose l_d is m or more. Raising
  // l_d resumes from the old l_d, lowering it by up to kKeptHipEntryStreams - 1 from the new one.
  std::vector<at::Tensor> hip_entries;
  // Frees the kept streams outside `window` (kept_entry_window's), but for layer `keep`'s.
  void drop_entries_outside(const EntryStreams& window, int64_t keep = -1) {
    for (int64_t l = 0; l < static_cast<int64_t>(hip_entries.size()); ++l)
      if (l != keep && (l < window.first_layer || l > window.last_layer)) hip_entries[static_cast<size_t>(l)] = at::Tensor();
  }
  int64_t hip_from = 0;  // the first layer the last HiP prefill ran
  // The viewed-layer-first prefill's stream entering the first layer it left (hip_mid_layer), for
  // finish_hip; undefined (-1) when the HiP side is whole.
  at::Tensor hip_mid;
  int64_t hip_mid_layer = -1;
  at::Tensor run_hip_layers(int64_t first, int64_t last, const at::Tensor& input);
  void take_kept_inputs(int64_t layer, PairedAnalysis& result);
  void prompt_metrics(const at::Tensor& hip_hidden, PairedAnalysis& result);
  void finish_hip();
  // A HiP-side run: `body` with `with` as the progress (detached however it ends), in inference
  // mode, out-of-memory errors named as the HiP prefill's.
  template <class Body>
  void run_hip_side(const AnalysisProgress& with, Body&& body) {
    struct Detach {
      State& s;
      ~Detach() { s.progress = {}; }
    } detach{*this};
    guard_out_of_memory(model->run, "the HiP prefill", [&] {
      c10::InferenceMode inference;
      progress = with;
      body();
      return 0;
    });
  }
  // What the views layer of `layer` computes with: this run's HiP settings, seed and the layer's maths;
  // the prefill's views and the views of kept inputs (views_of_kept) alike.
  LayerViewsSetup views_setup(int64_t layer, bool keep_masks) const {
    LayerViewsSetup setup;
    setup.layer = layer;
    setup.prompt_tokens = n;
    setup.params = options.hip.hip;
    setup.math = views_math(layer_attention_math(model->config, layer));
    setup.seed = options.random_seed;
    setup.method = options.hip.method;
    setup.keep_masks = keep_masks;
    setup.random_scores = options.random_scores;
    return setup;
  }
  // One layer's views from kept inputs and the HiP mask the kernels chose (undefined: the views layer
  // estimates it): what the prefill computes for that layer.
  LayerViewsResult views_of_kept(const LayerInputs& in, int64_t layer, const at::Tensor& hip_blocks, bool keep_masks,
                                 const std::function<void()>& checkpoint = {}) const {
    LayerViewsSetup setup = views_setup(layer, keep_masks);
    setup.checkpoint = checkpoint;
    LayerViewsChunk chunk = kept_layer_chunk(in);  // the same inputs the prefill gave the views layer
    chunk.hip_blocks = hip_blocks;
    std::unique_ptr<LayerViewsBackend> views = make_layer_views(model->run.device, setup);
    views->add_chunk(chunk);
    LayerViewsResult r = views->finish();
    r.quality.layer = layer;
    r.quality.dense = !hip_replaces_layer(model->config, options.hip.dense_layers, layer);
    return r;
  }
  // The dense side's last-layer rows of the prompt (once it is whole): kept, so that new HiP settings
  // re-run the HiP side alone (rerun_hip) and compare it with the same dense rows.
  at::Tensor dense_hidden;
  PairedAnalysis decode(int64_t decode_steps, int64_t refresh_every, bool consume);
  void install_callbacks();
  // The prefill leaves a layer's views for later (options.views_only_layer).
  // A deferred layer the prefill does not keep stays pending: its views need a prefill that keeps it.
  bool defers_views(int64_t l) const { return options.views_only_layer >= 0 && l != options.views_only_layer; }
  LatencyRecorder hip_recorder() const {
    LatencyRecorder r(model->config.n_layers);
    r.hip_side = true;
    for (int64_t l = 0; l < model->config.n_layers; ++l)
      r.hip_layer.push_back(hip_replaces_layer(model->config, options.hip.dense_layers, l) ? 1 : 0);
    return r;
  }
};

void PairedPrefill::State::install_callbacks() {
  // The prefills report after every layer, so a cancel is honoured mid-prefill (a long prompt on a
  // big model spends most of the run there); the decode steps report once per step.
  dense_model.set_layer_timer([this](int64_t l, double a, double o) {
    dense_timer->on_layer(l, a, o);
    if (prefilling) report(progress, 0.25 * (static_cast<double>(++calls) / passes), "dense prefill, layer " + std::to_string(l));
  });
  hip_model.set_layer_timer([this](int64_t l, double a, double o) {
    hip_timer->on_layer(l, a, o);
    if (!prefilling) return;
    if (pending_layer == l) {
      if (views[static_cast<size_t>(l)])
        views[static_cast<size_t>(l)]->add_chunk(pending);
      else if (options.keeps(l))  // layer_views reads it; a layer not kept can never be computed
        deferred_blocks[static_cast<size_t>(l)] = pending.hip_blocks;
      if (options.keeps(l)) {
        const size_t i = static_cast<size_t>(l);
        kept_q[i].push_back(pending.q);
        kept_k[i] = pending.k;
        kept_v[i] = pending.v;
      }
      pending = LayerViewsChunk{};
      pending_layer = -1;
    }
    report(progress, 0.25 + 0.6 * (static_cast<double>(++calls) / passes), "HiP prefill, layer " + std::to_string(l));
  });
  hip_attention->set_observer([this](const HipLayerEvent& e) {
    hip_timer->mask_seconds[static_cast<size_t>(e.layer)] = e.mask_seconds;
    hip_timer->record_seconds[static_cast<size_t>(e.layer)] = e.record_seconds;
    if (!e.call->decoding) {
      pending.q = e.call->q;
      pending.k = e.call->k;
      pending.v = e.call->v;
      pending.first_row = e.call->first_position;
      pending.hip_blocks = e.device_blocks;
      pending_layer = e.layer;
      return;
    }
    if (e.dense || !current_step) return;
    current_step->refreshed = current_step->refreshed || e.refreshed;
    for (int64_t h = 0; h < model->config.n_heads; ++h) {
      current_step->mask_tokens_accessed += static_cast<int64_t>(e.mask_keys[h].size());
      current_step->sparse_tokens_accessed += static_cast<int64_t>(e.sparse_keys[h].size());
      access->mask_keys.push_back(e.mask_keys[h]);
      access->sparse_keys.push_back(e.sparse_keys[h]);
    }
  });
}

void PairedPrefill::State::prefill() {
  // ---- prefill, dense side: every layer, or (viewed_layer_first) those up to the viewed one ------
  install_callbacks();
  report(progress, 0.0, "dense prefill");
  const int64_t stop = streamed_stop();
  const at::Tensor stream = run_dense_layers(0, stop, dense_model.embed(prompt.prompt_ids));
  if (stop < model->config.n_layers) {
    dense_mid = stream;
    dense_mid_layer = stop;
  } else {
    dense_hidden = stream;
  }
  hip_prefill();
}

at::Tensor PairedPrefill::State::run_dense_layers(int64_t first, int64_t last, const at::Tensor& input) {
  // The layers [first, last) report their progress in [0, 0.25) of this call.
  dense_timer = &dense_prefill_time;
  passes = static_cast<double>(std::max<int64_t>(1, last - first));
  calls = 0;
  prefilling = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{prefilling};
  return dense_model.forward_hidden_from(first, input, dense_cache, dense_attention, nullptr, last);
}

void PairedPrefill::State::finish_dense() {
  if (dense_mid_layer < 0) return;
  const int64_t layers = model->config.n_layers;
  report(progress, 0.0, "dense prefill from layer " + std::to_string(dense_mid_layer));
  // A retry after a throw times these layers again: their earlier (partial) figures go.
  for (int64_t l = dense_mid_layer; l < layers; ++l) dense_prefill_time.layers[static_cast<size_t>(l)] = ComponentMs{};
  dense_cache.truncate(0);  // the layers below dense_mid_layer hold the prompt's keys and values
  dense_hidden = run_dense_layers(dense_mid_layer, layers, dense_mid);
  dense_mid = at::Tensor();  // freed before the HiP layers run (the memory plan counts three streams)
  dense_mid_layer = -1;
}

void PairedPrefill::State::hip_prefill(const std::vector<LayerInputs>& carried) {
  const ModelConfig& c = model->config;
  PairedAnalysis& result = prompt;
  result.options = options;
  result.options.decode_steps = 0;
  install_callbacks();
  // With options.viewed_layer_first, the layers up to the viewed one run now and the rest in
  // finish_hip(): the viewed layer's results come out after a fraction of the layers. A run of every
  // layer needs the dense side whole (the per-token metrics compare both sides' last rows).
  const int64_t stop = std::max(hip_from, streamed_stop());
  if (stop == c.n_layers) finish_dense();

  // ---- prefill, HiP side; the views layer takes each layer's attention as it runs ---------------
  report(progress, 0.25, "HiP prefill");
  prefilling = true;
  views.clear();
  deferred_blocks.clear();
  pending = LayerViewsChunk{};  // what a cancelled run may have left
  pending_layer = -1;
  hip_attention->set_record_access(true);
  hip_attention->set_sync_timing(true);  // the latency breakdown splits mask estimation from sparse attention
  hip_timer = &hip_prefill_time;
  deferred_blocks.assign(static_cast<size_t>(c.n_layers), at::Tensor());
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (defers_views(l) || l < hip_from) {  // a layer not run again: from its carried inputs below
      views.push_back(nullptr);
      continue;
    }
    views.push_back(make_layer_views(model->run.device, views_setup(l, options.keeps(l))));
  }
  kept_q.assign(static_cast<size_t>(c.n_layers), {});
  kept_k.assign(static_cast<size_t>(c.n_layers), at::Tensor());
  kept_v.assign(static_cast<size_t>(c.n_layers), at::Tensor());
  calls = 0;
  AccessStreams& streams = result.access;
  // The layers HiP replaces (windowed layers and the first l_d full-attention ones are dense), in
  // model order from the first of them.
  streams.hip_layers.clear();
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (hip_replaces_layer(c, options.hip.dense_layers, l)) streams.hip_layers.push_back(l);
  streams.layers = static_cast<int64_t>(streams.hip_layers.size());
  streams.heads = c.n_heads;
  streams.first_layer = first_hip_layer(c, options.hip.dense_layers);
  passes = static_cast<double>(std::max<int64_t>(1, stop - hip_from));  // the layers this call runs
  const at::Tensor input = hip_from > 0 ? hip_entries.at(static_cast<size_t>(hip_from)) : hip_model.embed(result.prompt_ids);
  at::Tensor stream = run_hip_layers(hip_from, stop, input);
  prefilling = false;

  auto find_carried = [&](int64_t l) -> const LayerInputs* {
    for (const LayerInputs& in : carried)
      if (in.layer == l) return &in;
    return nullptr;
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (l < hip_from && !defers_views(l)) {  // not run again: its views from the same inputs as before
      report(progress, 0.85, "layer views, layer " + std::to_string(l));
      LayerViewsResult r = views_of_kept(*find_carried(l), l, at::Tensor(), options.keeps(l));
      result.layers.push_back(std::move(r.quality));
      if (r.has_masks) result.masks.push_back(std::move(r.masks));
      continue;
    }
    if (!views[static_cast<size_t>(l)] || l >= stop) {
      LayerQuality later;
      later.layer = l;
      later.dense = !hip_replaces_layer(c, options.hip.dense_layers, l);
      later.math = views_math(layer_attention_math(c, l));
      later.pending = true;
      result.layers.push_back(std::move(later));
      continue;
    }
    report(progress, 0.85, "layer views, layer " + std::to_string(l));
    LayerViewsResult r = views[static_cast<size_t>(l)]->finish();
    views[static_cast<size_t>(l)].reset();
    r.quality.layer = l;
    r.quality.dense = !hip_replaces_layer(c, options.hip.dense_layers, l);
    result.layers.push_back(std::move(r.quality));
    if (r.has_masks) result.masks.push_back(std::move(r.masks));
  }
  views.clear();
  for (int64_t l = 0; l < std::min(stop, c.n_layers); ++l) {
    if (l < hip_from) {
      const LayerInputs* in = find_carried(l);
      if (in && options.keeps(l)) result.inputs.push_back(*in);
      continue;
    }
    take_kept_inputs(l, result);
  }
  if (stop < c.n_layers) {
    hip_mid = stream;
    hip_mid_layer = stop;
    result.hip_through_layer = stop - 1;
    report(progress, 1.0, "HiP prefill through layer " + std::to_string(stop - 1));
    return;
  }
  hip_mid = at::Tensor();
  hip_mid_layer = -1;
  prompt_metrics(stream, result);
}

// Layers [first, last) of the HiP side from `input` (the stream entering `first`), the views layer
// and the kept inputs taking each layer's attention as it runs; keeps the streams entering the
// kKeptHipEntryStreams layers up to l_d it passes, and drops the others (memory: the plan counts
// kKeptHipEntryStreams of them whatever l_d is). Returns the stream entering `last`.
at::Tensor PairedPrefill::State::run_hip_layers(int64_t first, int64_t last, const at::Tensor& input) {
  const int64_t layers = model->config.n_layers;
  EntryStreams entries = kept_entry_window(options.hip.dense_layers, layers);
  prefilling = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{prefilling};
  at::Tensor stream = hip_model.forward_hidden_from(first, input, hip_cache, *hip_attention, &entries, last);
  hip_entries.resize(static_cast<size_t>(layers));
  drop_entries_outside(entries);
  for (int64_t l = entries.first_layer; l <= entries.last_layer; ++l)
    if (const at::Tensor& e = entries.streams[static_cast<size_t>(l - entries.first_layer)]; e.defined())
      hip_entries[static_cast<size_t>(l)] = e;
  return stream;
}

void PairedPrefill::State::take_kept_inputs(int64_t l, PairedAnalysis& result) {
  const size_t i = static_cast<size_t>(l);
  if (i >= kept_q.size() || kept_q[i].empty()) return;
  const at::Tensor q = kept_q[i].size() == 1 ? kept_q[i][0] : at::cat(kept_q[i], 1);
  result.inputs.push_back(keep_layer_inputs(l, q, kept_k[i], kept_v[i]));
  kept_q[i].clear();
  kept_k[i] = kept_v[i] = at::Tensor();
}

// ---- prompt metrics, a block of rows at a time on the device ------------------------------------
void PairedPrefill::State::prompt_metrics(const at::Tensor& hip_hidden, PairedAnalysis& result) {
  report(progress, 0.95, "per-token metrics");
  const PairedTokenMetrics metrics = paired_token_metrics(dense_model, dense_hidden, hip_hidden, result.prompt_ids);
  result.dense.nll = metrics.dense_nll;
  result.hip.nll = metrics.hip_nll;
  finish_side(result.dense);
  finish_side(result.hip);
  result.kl = metrics.kl;
  result.top1_agreement = metrics.top1_agreement;
  dense_next = metrics.dense_last;
  hip_next = metrics.hip_last;
  result.hip_through_layer = -1;
  report(progress, 1.0, "prefill done");
}

// The layers a viewed-layer-first prefill left on both sides (the dense ones from dense_mid_layer, the
// HiP ones from hip_mid_layer), their kept inputs and the prompt's metrics, into a copy of the partial
// results. Restartable: a throw leaves the partial state as it was (or the dense side whole).
void PairedPrefill::State::finish_hip() {
  const ModelConfig& c = model->config;
  install_callbacks();
  finish_dense();
  report(progress, 0.25, "HiP prefill from layer " + std::to_string(hip_mid_layer));
  pending = LayerViewsChunk{};
  pending_layer = -1;
  views.clear();  // the layers left are all deferred
  views.resize(static_cast<size_t>(c.n_layers));
  kept_q.assign(static_cast<size_t>(c.n_layers), {});
  kept_k.assign(static_cast<size_t>(c.n_layers), at::Tensor());
  kept_v.assign(static_cast<size_t>(c.n_layers), at::Tensor());
  for (int64_t l = hip_mid_layer; l < c.n_layers; ++l) deferred_blocks[static_cast<size_t>(l)] = at::Tensor();
  hip_timer = &hip_prefill_time;
  // A retry after a throw times these layers again: their earlier (partial) figures go.
  for (int64_t l = hip_mid_layer; l < c.n_layers; ++l) hip_prefill_time.layers[static_cast<size_t>(l)] = ComponentMs{};
  passes = static_cast<double>(c.n_layers - hip_mid_layer);
  calls = 0;
  hip_cache.truncate(0);  // the layers below hip_mid_layer hold the prompt's keys and values
  at::Tensor stream;
  try {
    stream = run_hip_layers(hip_mid_layer, c.n_layers, hip_mid);
  } catch (...) {  // a cancel or give-way: the layer a half run held goes now, not at the retry
    pending = LayerViewsChunk{};
    pending_layer = -1;
    kept_q.clear();
    kept_k.clear();
    kept_v.clear();
    throw;
  }
  // The copy only after the layers: it holds the viewed layer's host masks (a tenth of a second at
  // 32k tokens), and a slider change must not wait for it before this stage's first give-way check.
  PairedAnalysis result = *prompt_result;
  views.clear();
  for (int64_t l = hip_mid_layer; l < c.n_layers; ++l) take_kept_inputs(l, result);
  kept_q.clear();
  kept_k.clear();
  kept_v.clear();
  prompt_metrics(stream, result);
  hip_mid = at::Tensor();
  hip_mid_layer = -1;
  prompt_result = std::make_shared<PairedAnalysis>(std::move(result));
}

void PairedPrefill::rerun_hip(const AnalysisOptions& options, const AnalysisProgress& progress) {
  State& s = *state_;
  if (!s.prompt_result) throw std::logic_error("PairedPrefill::rerun_hip after finish()");
  validate_hip_model_params(options.hip);
  AnalysisOptions kept = options;
  kept.decode_steps = s.options.decode_steps;
  kept.context_limit = s.options.context_limit;
  kept.force_dense_tokens = s.options.force_dense_tokens;
  // A prefill that fell back to keeping the viewed layer's inputs (memory) does so again.
  if (!s.options.keep_all_layers && options.keep_all_layers && options.keep_viewed_if_short && options.views_only_layer >= 0) {
    kept.keep_all_layers = false;
    kept.keep_layers = {options.views_only_layer};
  }
  std::shared_ptr<PairedAnalysis> before = std::move(s.prompt_result);
  // The layers below the first one the change reaches are not run again: below the old and the new
  // l_d both sides of this model are dense. They resume from the highest kept stream at or below the
  // new l_d (the old l_d's when l_d rises, the new one's when it falls), and the layers below it
  // whose inputs the new run keeps or must view were kept by the last run (their inputs are carried;
  // their views are recomputed with the new settings).
  int64_t from = std::min<int64_t>(kept.hip.dense_layers, static_cast<int64_t>(s.hip_entries.size()) - 1);
  while (from > 0 && !s.hip_entries[static_cast<size_t>(from)].defined()) --from;
  from = std::max<int64_t>(from, 0);
  std::vector<LayerInputs> carried;
  for (int64_t l = 0; l < from; ++l) {
    const bool needed = kept.keeps(l) || !(kept.views_only_layer >= 0 && l != kept.views_only_layer);
    const LayerInputs* in = before->find_inputs(l);
    if (in) carried.push_back(*in);
    else if (needed) from = 0;
  }
  if (from == 0) carried.clear();
  s.run_hip_side(progress, [&] {
    s.options = kept;
    s.hip_attention = std::make_unique<HipAttention>(kept.hip, s.model->config.n_layers);
    s.hip_cache.truncate(0);  // the layers below `from` keep the prompt's keys and values they wrote
    const LatencyRecorder last = std::move(s.hip_prefill_time);
    s.hip_prefill_time = s.hip_recorder();
    for (int64_t l = 0; l < from; ++l) s.hip_prefill_time.layers[static_cast<size_t>(l)] = last.layers[static_cast<size_t>(l)];
    s.hip_from = from;
    // Streams this run will not keep are freed before it, so that its peak holds no more of them than
    // the memory plan counts (the one it resumes from is in its window: at or below the new l_d).
    s.drop_entries_outside(kept_entry_window(kept.hip.dense_layers, s.model->config.n_layers), from);
    s.prompt = PairedAnalysis{};
    s.prompt.prompt_ids = before->prompt_ids;
    before.reset();  // its kept inputs go with the last holder (the screen's view), not with this run
    s.hip_prefill(carried);  // on a throw, prompt_result stays null: this prefill decodes no more
  });
  s.prompt_result = std::make_shared<PairedAnalysis>(std::move(s.prompt));
  s.prompt = PairedAnalysis{};
}

PairedAnalysis PairedPrefill::State::decode(int64_t decode_steps, int64_t refresh_every, bool consume) {
  // The decode steps add to a copy of the prompt's results, or to the results themselves on the last
  // decode when no one else holds them (run_paired_analysis: no second copy of the kept inputs).
  PairedAnalysis result;
  if (consume && prompt_result.use_count() == 1)
    result = std::move(*prompt_result);
  else
    result = *prompt_result;
  if (consume) prompt_result.reset();
  result.options.decode_steps = decode_steps;
  result.options.hip.refresh_every = refresh_every;
  // Back to the end of the prompt: the steps overwrite positions past it, and the HiP side starts
  // with no cached decode masks, as after its prefill.
  dense_cache.truncate(n);
  hip_cache.truncate(n);
  hip_attention->set_refresh_every(refresh_every);
  LatencyRecorder dense_decode_time(model->config.n_layers);
  LatencyRecorder hip_decode_time = hip_recorder();
  dense_timer = &dense_decode_time;
  hip_timer = &hip_decode_time;
  access = &result.access;
  prefilling = false;

  int32_t dense_token = dense_next;
  int32_t hip_token = hip_next;
  const bool replay_dense = dense_steps && static_cast<int64_t>(dense_steps->tokens.size()) == decode_steps;
  std::vector<int32_t> dense_tokens;
  PhaseProfile step_profile;  // HIPSTUDIO_PROFILE=1: each side's step time
  for (int64_t step = 0; step < decode_steps; ++step) {
    report(progress, static_cast<double>(step) / static_cast<double>(decode_steps), "decode step " + std::to_string(step));
    DecodeStepRecord record;
    record.step = step;
    record.position = n + step;
    result.dense.generated.push_back(dense_token);
    result.hip.generated.push_back(hip_token);
    const int32_t hip_input = options.force_dense_tokens ? dense_token : hip_token;
    step_profile.begin(n > 0 && model->run.device.is_cuda());
    at::Tensor d;
    if (!replay_dense) d = dense_model.forward({dense_token}, dense_cache, dense_attention, LogitsFor::LastToken, Phase::Decode);
    step_profile.lap("dense step");
    current_step = &record;
    const at::Tensor h = hip_model.forward({hip_input}, hip_cache, *hip_attention, LogitsFor::LastToken, Phase::Decode);
    current_step = nullptr;
    step_profile.lap(record.refreshed ? "HiP refresh step" : "HiP cached step");
    dense_token = replay_dense ? dense_steps->tokens[static_cast<size_t>(step)]
                               : static_cast<int32_t>(d[0].argmax().item<int64_t>());
    dense_tokens.push_back(dense_token);
    hip_token = static_cast<int32_t>(h[0].argmax().item<int64_t>());
    record.dense_token = dense_token;
    record.hip_token = hip_token;
    result.mask_refreshes += record.refreshed ? 1 : 0;
    result.decode.push_back(record);
  }
  access = nullptr;
  // generated[] ends with the last step's choice too: step s feeds generated[s] (at position n + s)
  // and its record's token is generated[s + 1].
  if (decode_steps > 0) {
    result.dense.generated.push_back(dense_token);
    result.hip.generated.push_back(hip_token);
  }
  result.access.steps = decode_steps;

  if (replay_dense)
    dense_decode_time = dense_steps->time;  // measured when the steps ran
  else
    dense_steps = DenseSteps{std::move(dense_tokens), dense_decode_time};
  store_latency(dense_prefill_time, dense_decode_time, decode_steps, result.dense.latency);
  store_latency(hip_prefill_time, hip_decode_time, decode_steps, result.hip.latency);
  step_profile.print("paired decode, " + std::to_string(decode_steps) + " steps");
  hip_attention->print_profile("HiP side's attention in those steps");
  report(progress, 1.0, "done");
  return result;
}

PairedPrefill::PairedPrefill(std::unique_ptr<State> state) : state_(std::move(state)) {}
PairedPrefill::~PairedPrefill() = default;

std::shared_ptr<const PairedAnalysis> PairedPrefill::prompt_result() const { return state_->prompt_result; }
int64_t PairedPrefill::decode_room() const { return state_->decode_room; }
int64_t PairedPrefill::hip_first_layer() const { return state_->hip_from; }
bool PairedPrefill::hip_pending() const { return state_->prompt_result && state_->hip_mid_layer >= 0; }

void PairedPrefill::finish_hip(const AnalysisProgress& progress) {
  State& s = *state_;
  if (!hip_pending()) throw std::logic_error("PairedPrefill::finish_hip: the HiP side is whole");
  s.run_hip_side(progress, [&] { s.finish_hip(); });
}

std::unique_ptr<PairedPrefill> PairedPrefill::run(std::shared_ptr<const Model> model, const std::string& prompt,
                                                  const AnalysisOptions& options, int64_t decode_room,
                                                  const AnalysisProgress& progress) {
  const RunDevice run = model->run;
  return guard_out_of_memory(run, "the paired analysis", [&] {
    c10::InferenceMode inference;
    validate_hip_model_params(options.hip);
    if (options.decode_steps < 0) throw InputError("the number of decode steps must be >= 0");
    if (prompt.empty()) throw InputError("the prompt is empty: pass some text with --prompt TEXT or --prompt @FILE");
    const ModelConfig& c = model->config;
    std::vector<int32_t> ids = model->tokenizer->encode(prompt, true);
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n < 2) throw InputError("the prompt has a single token: the analysis needs at least two");
    // Room for decoding: what was asked, up to what the context holds past the prompt, and never
    // less than this run's own steps (plan_run then names the limit if those do not fit).
    const int64_t context = options.context_limit > 0 ? options.context_limit : c.max_seq_len;
    const int64_t room = std::max(options.decode_steps, std::min(decode_room, context - n));
    AnalysisOptions kept = options;
    auto plan_with = [&](const AnalysisOptions& o) {
      AnalysisOptions planned = o;
      planned.decode_steps = room;
      AnalysisMemoryShape extras;
      const RunMemoryShape shape = paired_analysis_shape(*model, n, planned, extras);
      return plan_run(c, model->run, shape, options.context_limit);
    };
    ContextPlan plan;
    try {
      plan = plan_with(kept);
    } catch (const InputError&) {
      if (!options.keep_viewed_if_short || options.views_only_layer < 0 || !options.keep_all_layers) throw;
      // Every layer's Q/K/V do not fit: the viewed layer's only (a refusal now names this smaller run).
      kept.keep_all_layers = false;
      kept.keep_layers = {options.views_only_layer};
      plan = plan_with(kept);
    }
    auto state = std::make_unique<State>(model, kept, plan.capacity);
    state->n = n;
    state->decode_room = room;
    state->progress = progress;
    state->prompt.prompt_ids = std::move(ids);
    state->prefill();
    state->prompt_result = std::make_shared<PairedAnalysis>(std::move(state->prompt));
    state->prompt = PairedAnalysis{};
    state->progress = {};
    return std::unique_ptr<PairedPrefill>(new PairedPrefill(std::move(state)));
  });
}

std::vector<int64_t> PairedPrefill::pending_views() const {
  std::vector<int64_t> layers;
  if (!state_->prompt_result) return layers;
  for (const LayerQuality& q : state_->prompt_result->layers)
    if (q.pending) layers.push_back(q.layer);
  return layers;
}

LayerViewsResult PairedPrefill::layer_views(int64_t layer, const std::function<void()>& checkpoint) {
  State& s = *state_;
  if (!s.prompt_result) throw std::logic_error("PairedPrefill::layer_views after finish()");
  const PairedAnalysis& prompt = *s.prompt_result;
  if (layer < 0 || layer >= static_cast<int64_t>(prompt.layers.size()) || !prompt.layers[static_cast<size_t>(layer)].pending)
    throw std::logic_error("PairedPrefill::layer_views: layer " + std::to_string(layer) + " has no deferred views");
  const LayerInputs* in = prompt.find_inputs(layer);
  if (!in) throw std::logic_error("PairedPrefill::layer_views: the prefill kept no inputs of layer " + std::to_string(layer));
  return guard_out_of_memory(s.model->run, "the layer views of layer " + std::to_string(layer), [&] {
    c10::InferenceMode inference;
    LayerViewsResult r = s.views_of_kept(*in, layer, s.deferred_blocks[static_cast<size_t>(layer)], true, checkpoint);
    // The caller keeps the result: the kernels' mask is not needed again (a second call estimates it).
    s.deferred_blocks[static_cast<size_t>(layer)] = at::Tensor();
    return r;
  });
}

PairedAnalysis PairedPrefill::decode(int64_t decode_steps, int64_t refresh_every, const AnalysisProgress& progress) {
  return decode_steps_run(decode_steps, refresh_every, progress, false);
}

PairedAnalysis PairedPrefill::finish(int64_t decode_steps, int64_t refresh_every, const AnalysisProgress& progress) {
  return decode_steps_run(decode_steps, refresh_every, progress, true);
}

PairedAnalysis PairedPrefill::decode_steps_run(int64_t decode_steps, int64_t refresh_every, const AnalysisProgress& progress,
                                               bool consume) {
  if (!state_->prompt_result) throw std::logic_error("PairedPrefill::decode after finish()");
  if (state_->hip_mid_layer >= 0 || state_->dense_mid_layer >= 0)
    throw std::logic_error("PairedPrefill::decode before finish_hip()");
  if (decode_steps < 0 || decode_steps > state_->decode_room)
    throw InputError("this prefill left room for " + std::to_string(state_->decode_room) + " decode steps, not " +
                     std::to_string(decode_steps) + ": run the prefill again with more room");
  if (refresh_every < 1) throw hip::HipParamError("r_m (" + std::to_string(refresh_every) + ") must be >= 1");
  State& s = *state_;
  // Whatever way the steps end (done, cancelled, out of memory), nothing keeps pointing at this
  // call's locals: the callbacks the models hold read these.
  struct Detach {
    State& s;
    ~Detach() {
      s.progress = {};
      s.access = nullptr;
      s.current_step = nullptr;
      s.dense_timer = s.hip_timer = nullptr;
    }
  } detach{s};
  return guard_out_of_memory(s.model->run, "the paired analysis's decode steps", [&] {
    c10::InferenceMode inference;
    s.progress = progress;
    return s.decode(decode_steps, refresh_every, consume);
  });
}

PairedAnalysis run_paired_analysis(std::shared_ptr<const Model> model, const std::string& prompt,
                                   const AnalysisOptions& options, const AnalysisProgress& progress) {
  auto part = [&](double from, double span) -> AnalysisProgress {
    if (!progress) return {};
    return [&progress, from, span](double f, const std::string& what) { return progress(from + span * f, what); };
  };
  std::unique_ptr<PairedPrefill> prefill = PairedPrefill::run(model, prompt, options, options.decode_steps, part(0.0, 0.9));
  return prefill->finish(options.decode_steps, options.hip.refresh_every, part(0.9, 0.1));
}

}  // namespace hipstudio
