#include "engine/model/paired_analysis.h"

#include <cmath>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/formats/errors.h"
#include "engine/model/context_plan.h"
#include "engine/model/kv_cache.h"
#include "engine/model/layer_views_backend.h"
#include "engine/model/out_of_memory.h"
#include "engine/model/token_metrics.h"
#include "engine/model/transformer.h"

namespace hipstudio {

namespace {

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
  int64_t dense_layers = 0;
  // From the HiP events of the current call, per layer: mask estimation, and the access recording
  // that runs inside the call but is the analysis' bookkeeping, not HiP's cost.
  std::vector<double> mask_seconds, record_seconds;

  explicit LatencyRecorder(int64_t n_layers) : layers(static_cast<size_t>(n_layers)), mask_seconds(n_layers), record_seconds(n_layers) {}

  void on_layer(int64_t l, double attention_s, double other_s) {
    ComponentMs& c = layers[static_cast<size_t>(l)];
    c.other += other_s * 1e3;
    if (!hip_side || l < dense_layers) {
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

// The prompt's token ids in prefill chunks of `chunk` rows: [begin, end) pairs.
static std::vector<std::pair<int64_t, int64_t>> prefill_chunks(int64_t n, int64_t chunk) {
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t a = 0; a < n; a += chunk) chunks.emplace_back(a, std::min(n, a + chunk));
  return chunks;
}

// run_paired_analysis() without the out-of-memory boundary: every tensor of the run lives in this frame.
static PairedAnalysis run_paired_analysis_unguarded(std::shared_ptr<const Model> model, const std::string& prompt,
                                                    const AnalysisOptions& options, const AnalysisProgress& progress) {
  c10::InferenceMode inference;
  validate_hip_model_params(options.hip);
  PairedAnalysis result;
  result.options = options;
  const ModelConfig& c = model->config;
  if (prompt.empty()) throw InputError("the prompt is empty: pass some text with --prompt TEXT or --prompt @FILE");
  result.prompt_ids = model->tokenizer->encode(prompt, true);
  const int64_t n = static_cast<int64_t>(result.prompt_ids.size());
  if (n < 2) throw InputError("the prompt has a single token: the analysis needs at least two");
  AnalysisMemoryShape extras;
  const RunMemoryShape shape = paired_analysis_shape(*model, n, options, extras);
  const ContextPlan plan = plan_run(c, model->run, shape, options.context_limit);
  const int64_t chunk = shape.prefill_chunk;
  const auto chunks = prefill_chunks(n, chunk);
  auto chunk_ids = [&](const std::pair<int64_t, int64_t>& r) {
    return std::vector<int32_t>(result.prompt_ids.begin() + r.first, result.prompt_ids.begin() + r.second);
  };
  const double layers = static_cast<double>(c.n_layers);
  const double passes = static_cast<double>(chunks.size()) * layers;  // layer calls per prefill

  // ---- prefill, dense side ----------------------------------------------------------------------
  report(progress, 0.0, "dense prefill");
  DenseAttention dense_attention;
  Transformer dense_model(model, plan.capacity);
  KVCache dense_cache(c, model->run, plan.capacity);
  LatencyRecorder dense_prefill_time(c.n_layers), dense_decode_time(c.n_layers);
  LatencyRecorder* dense_timer = &dense_prefill_time;
  // The prefills report after every layer, so a cancel is honoured mid-prefill (a long prompt on a
  // big model spends most of the run there); the decode steps report once per step below.
  bool prefilling = true;
  int64_t calls = 0;
  dense_model.set_layer_timer([&](int64_t l, double a, double o) {
    dense_timer->on_layer(l, a, o);
    if (prefilling) report(progress, 0.2 * (static_cast<double>(++calls) / passes), "dense prefill, layer " + std::to_string(l));
  });
  std::vector<at::Tensor> dense_rows;
  for (const auto& r : chunks) dense_rows.push_back(dense_model.forward_hidden(chunk_ids(r), dense_cache, dense_attention));
  const at::Tensor dense_hidden = at::cat(dense_rows);
  dense_rows.clear();

  // ---- prefill, HiP side; the views layer takes each layer's attention as it runs ---------------
  report(progress, 0.2, "HiP prefill");
  HipAttention hip_attention(options.hip, c.n_layers);
  hip_attention.set_record_access(true);
  hip_attention.set_sync_timing(true);  // the latency breakdown splits mask estimation from sparse attention
  Transformer hip_model(model, plan.capacity);
  KVCache hip_cache(c, model->run, plan.capacity);
  LatencyRecorder hip_prefill_time(c.n_layers), hip_decode_time(c.n_layers);
  hip_prefill_time.hip_side = hip_decode_time.hip_side = true;
  hip_prefill_time.dense_layers = hip_decode_time.dense_layers = options.hip.dense_layers;
  LatencyRecorder* hip_timer = &hip_prefill_time;

  std::vector<std::unique_ptr<LayerViewsBackend>> views;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerViewsSetup setup;
    setup.layer = l;
    setup.prompt_tokens = n;
    setup.params = options.hip.hip;
    setup.seed = options.random_seed;
    setup.keep_masks = options.keeps(l);
    views.push_back(make_layer_views(model->run.device, setup));
  }
  // Kept layers' inputs: host float32 queries of every chunk, keys/values of the last (all of them).
  std::vector<std::vector<at::Tensor>> kept_q(static_cast<size_t>(c.n_layers));
  std::vector<at::Tensor> kept_k(static_cast<size_t>(c.n_layers)), kept_v(static_cast<size_t>(c.n_layers));
  // The layer call the observer saw, handed to the views layer from the layer timer: that runs after
  // the layer's timings are taken, so the views' work never counts as HiP's latency.
  LayerViewsChunk pending;
  int64_t pending_layer = -1;
  calls = 0;
  hip_model.set_layer_timer([&](int64_t l, double a, double o) {
    hip_timer->on_layer(l, a, o);
    if (!prefilling) return;
    if (pending_layer == l) {
      views[static_cast<size_t>(l)]->add_chunk(pending);
      if (options.keeps(l)) {
        const size_t i = static_cast<size_t>(l);
        kept_q[i].push_back(pending.q.to(at::kCPU, at::kFloat));
        kept_k[i] = pending.k;
        kept_v[i] = pending.v;
      }
      pending = LayerViewsChunk{};
      pending_layer = -1;
    }
    report(progress, 0.2 + 0.6 * (static_cast<double>(++calls) / passes), "HiP prefill, layer " + std::to_string(l));
  });

  DecodeStepRecord* current_step = nullptr;
  int64_t hip_layers = std::max<int64_t>(0, c.n_layers - options.hip.dense_layers);
  AccessStreams& access = result.access;
  access.layers = hip_layers;
  access.heads = c.n_heads;
  access.first_layer = options.hip.dense_layers;
  hip_attention.set_observer([&](const HipLayerEvent& e) {
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
    for (int64_t h = 0; h < c.n_heads; ++h) {
      current_step->mask_tokens_accessed += static_cast<int64_t>(e.mask_keys[h].size());
      current_step->sparse_tokens_accessed += static_cast<int64_t>(e.sparse_keys[h].size());
      access.mask_keys.push_back(e.mask_keys[h]);
      access.sparse_keys.push_back(e.sparse_keys[h]);
    }
  });
  std::vector<at::Tensor> hip_rows;
  for (const auto& r : chunks) hip_rows.push_back(hip_model.forward_hidden(chunk_ids(r), hip_cache, hip_attention));
  const at::Tensor hip_hidden = at::cat(hip_rows);
  hip_rows.clear();

  for (int64_t l = 0; l < c.n_layers; ++l) {
    report(progress, 0.8, "layer views, layer " + std::to_string(l));
    LayerViewsResult r = views[static_cast<size_t>(l)]->finish();
    views[static_cast<size_t>(l)].reset();
    r.quality.layer = l;
    r.quality.dense = l < options.hip.dense_layers;
    result.layers.push_back(std::move(r.quality));
    if (r.has_masks) result.masks.push_back(std::move(r.masks));
  }
  auto to_floats = [](const at::Tensor& t) {
    const at::Tensor f = t.to(at::kCPU, at::kFloat).contiguous();
    return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const size_t i = static_cast<size_t>(l);
    if (kept_q[i].empty()) continue;
    LayerInputs in;
    in.layer = l;
    const at::Tensor q = at::cat(kept_q[i], 1);
    kept_q[i].clear();
    in.heads = q.size(0);
    in.tokens = q.size(1);
    in.dim = q.size(2);
    in.kv_heads = kept_k[i].size(0);
    in.q = to_floats(q);
    in.k = to_floats(kept_k[i]);
    in.v = to_floats(kept_v[i]);
    kept_k[i] = kept_v[i] = at::Tensor();
    result.inputs.push_back(std::move(in));
  }

  // ---- prompt metrics, a block of rows at a time on the device ------------------------------------
  report(progress, 0.85, "per-token metrics");
  const PairedTokenMetrics metrics = paired_token_metrics(dense_model, dense_hidden, hip_hidden, result.prompt_ids);
  result.dense.nll = metrics.dense_nll;
  result.hip.nll = metrics.hip_nll;
  finish_side(result.dense);
  finish_side(result.hip);
  result.kl = metrics.kl;
  result.top1_agreement = metrics.top1_agreement;

  // ---- greedy decoding on both sides ------------------------------------------------------------
  prefilling = false;
  dense_timer = &dense_decode_time;
  hip_timer = &hip_decode_time;
  int32_t dense_next = metrics.dense_last;
  int32_t hip_next = metrics.hip_last;
  for (int64_t step = 0; step < options.decode_steps; ++step) {
    report(progress, 0.9 + 0.1 * static_cast<double>(step) / static_cast<double>(options.decode_steps), "decode step " + std::to_string(step));
    DecodeStepRecord record;
    record.step = step;
    record.position = n + step;
    result.dense.generated.push_back(dense_next);
    result.hip.generated.push_back(hip_next);
    const int32_t hip_input = options.force_dense_tokens ? dense_next : hip_next;
    const at::Tensor d = dense_model.forward({dense_next}, dense_cache, dense_attention, LogitsFor::LastToken, Phase::Decode);
    current_step = &record;
    const at::Tensor h = hip_model.forward({hip_input}, hip_cache, hip_attention, LogitsFor::LastToken, Phase::Decode);
    current_step = nullptr;
    dense_next = static_cast<int32_t>(d[0].argmax().item<int64_t>());
    hip_next = static_cast<int32_t>(h[0].argmax().item<int64_t>());
    record.dense_token = dense_next;
    record.hip_token = hip_next;
    result.mask_refreshes += record.refreshed ? 1 : 0;
    result.decode.push_back(record);
  }
  // generated[] ends with the last step's choice too: step s feeds generated[s] (at position n + s)
  // and its record's token is generated[s + 1].
  if (options.decode_steps > 0) {
    result.dense.generated.push_back(dense_next);
    result.hip.generated.push_back(hip_next);
  }
  access.steps = options.decode_steps;

  store_latency(dense_prefill_time, dense_decode_time, options.decode_steps, result.dense.latency);
  store_latency(hip_prefill_time, hip_decode_time, options.decode_steps, result.hip.latency);
  report(progress, 1.0, "done");
  return result;
}

PairedAnalysis run_paired_analysis(std::shared_ptr<const Model> model, const std::string& prompt,
                                   const AnalysisOptions& options, const AnalysisProgress& progress) {
  return guard_out_of_memory(model->run, "the paired analysis",
                             [&] { return run_paired_analysis_unguarded(model, prompt, options, progress); });
}

}  // namespace hipstudio
