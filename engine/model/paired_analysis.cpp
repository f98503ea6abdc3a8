#include "engine/model/paired_analysis.h"

#include <cmath>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/formats/errors.h"
#include "engine/model/context_plan.h"
#include "engine/model/host_inputs.h"
#include "engine/model/kv_cache.h"
#include "engine/model/out_of_memory.h"
#include "engine/model/transformer.h"
#include "kernels/attention_metrics.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/sparse_attention_reference.h"

namespace hipstudio {

namespace {

// Per-token NLL of the next token from logits [n, vocab] (float32) over ids [n].
std::vector<double> next_token_nll(const at::Tensor& logits, const std::vector<int32_t>& ids, at::Tensor* logprobs_out) {
  at::Tensor logprobs = at::log_softmax(logits.to(at::kDouble), -1);
  std::vector<double> nll;
  const double* lp = logprobs.data_ptr<double>();
  const int64_t vocab = logprobs.size(1);
  for (size_t i = 0; i + 1 < ids.size(); ++i) nll.push_back(-lp[static_cast<int64_t>(i) * vocab + ids[i + 1]]);
  *logprobs_out = logprobs;
  return nll;
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
  int64_t dense_layers = 0;
  std::vector<double> mask_seconds, sparse_seconds;  // from HiP events of the current call, per layer

  explicit LatencyRecorder(int64_t n_layers) : layers(static_cast<size_t>(n_layers)), mask_seconds(n_layers), sparse_seconds(n_layers) {}

  void on_layer(int64_t l, double attention_s, double other_s) {
    ComponentMs& c = layers[static_cast<size_t>(l)];
    c.other += other_s * 1e3;
    if (!hip_side || l < dense_layers) {
      c.dense += attention_s * 1e3;
    } else {
      // The backend's own split of its time; host copies and bookkeeping count as sparse attention.
      const double mask_ms = mask_seconds[static_cast<size_t>(l)] * 1e3;
      c.mask += mask_ms;
      c.sparse += std::max(0.0, attention_s * 1e3 - mask_ms);
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

LayerQuality layer_quality(const at::Tensor& q_any, const at::Tensor& k_any, const at::Tensor& v_any,
                           const hip::HipParams& params, uint64_t random_seed) {
  const HostAttentionInputs host(q_any, k_any, v_any);
  const hip::AttentionInputs& in = host.view;

  const hip::MaskResult hip_mask = hip::estimate_masks(in, params).mask;
  const hip::MaskResult oracle = hip::oracle_masks(in, params);
  const hip::MaskResult random = hip::random_masks(in, params, random_seed);
  const int64_t qbs = hip_mask.query_blocks;
  const std::vector<double> recall = hip::mean_per_head(hip::mask_recall(hip_mask, oracle), in.hq, qbs);
  const std::vector<double> random_recall = hip::mean_per_head(hip::mask_recall(random, oracle), in.hq, qbs);
  const std::vector<hip::AttentionMass> mass = hip::attention_mass(in, params, {&hip_mask, &random});
  const hip::AttentionOutput dense = hip::dense_attention_reference(in, params);
  const std::vector<double> err = hip::output_relative_error(hip::sparse_attention_reference(in, params, hip_mask), dense);
  const std::vector<double> random_err =
      hip::output_relative_error(hip::sparse_attention_reference(in, params, random), dense);

  LayerQuality quality;
  for (int64_t h = 0; h < in.hq; ++h) {
    HeadQuality head;
    head.recall = recall[h];
    head.random_recall = random_recall[h];
    head.mass = mass[0].per_head[h];
    head.random_mass = mass[1].per_head[h];
    head.out_rel_err = err[h];
    head.random_out_rel_err = random_err[h];
    quality.heads.push_back(head);
  }
  return quality;
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
  extras.hip = options.hip;
  RunMemoryShape shape;
  shape.prompt_tokens = n;
  shape.new_tokens = options.decode_steps;
  shape.prefill_chunk = n;  // one chunk, below
  shape.all_logits = true;
  shape.analysis = &extras;
  const ContextPlan plan = plan_run(c, model->run, shape, options.context_limit);

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
  const double layers = static_cast<double>(c.n_layers);
  dense_model.set_layer_timer([&](int64_t l, double a, double o) {
    dense_timer->on_layer(l, a, o);
    if (prefilling) report(progress, 0.15 * static_cast<double>(l + 1) / layers, "dense prefill, layer " + std::to_string(l));
  });
  // One chunk: the analysis needs every layer's Q for the whole prompt at once.
  const at::Tensor dense_logits = dense_model.forward(result.prompt_ids, dense_cache, dense_attention, LogitsFor::AllTokens);

  // ---- prefill, HiP side, capturing each layer's Q/K/V ------------------------------------------
  report(progress, 0.15, "HiP prefill");
  HipAttention hip_attention(options.hip, c.n_layers);
  hip_attention.set_record_access(true);
  hip_attention.set_sync_timing(true);  // the latency breakdown splits mask estimation from sparse attention
  Transformer hip_model(model, plan.capacity);
  KVCache hip_cache(c, model->run, plan.capacity);
  LatencyRecorder hip_prefill_time(c.n_layers), hip_decode_time(c.n_layers);
  hip_prefill_time.hip_side = hip_decode_time.hip_side = true;
  hip_prefill_time.dense_layers = hip_decode_time.dense_layers = options.hip.dense_layers;
  LatencyRecorder* hip_timer = &hip_prefill_time;
  hip_model.set_layer_timer([&](int64_t l, double a, double o) {
    hip_timer->on_layer(l, a, o);
    if (prefilling) report(progress, 0.15 + 0.15 * static_cast<double>(l + 1) / layers, "HiP prefill, layer " + std::to_string(l));
  });

  struct Capture {
    at::Tensor q, k, v;
  };
  std::vector<Capture> captures(static_cast<size_t>(c.n_layers));
  DecodeStepRecord* current_step = nullptr;
  int64_t hip_layers = std::max<int64_t>(0, c.n_layers - options.hip.dense_layers);
  AccessStreams& access = result.access;
  access.layers = hip_layers;
  access.heads = c.n_heads;
  access.first_layer = options.hip.dense_layers;
  hip_attention.set_observer([&](const HipLayerEvent& e) {
    hip_timer->mask_seconds[static_cast<size_t>(e.layer)] = e.mask_seconds;
    if (!e.call->decoding) {
      captures[static_cast<size_t>(e.layer)] = {e.call->q.clone(), e.call->k.clone(), e.call->v.clone()};
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
  const at::Tensor hip_logits = hip_model.forward(result.prompt_ids, hip_cache, hip_attention, LogitsFor::AllTokens);

  // ---- prompt metrics ----------------------------------------------------------------------------
  at::Tensor dense_lp, hip_lp;
  result.dense.nll = next_token_nll(dense_logits, result.prompt_ids, &dense_lp);
  result.hip.nll = next_token_nll(hip_logits, result.prompt_ids, &hip_lp);
  finish_side(result.dense);
  finish_side(result.hip);
  result.kl = (dense_lp.exp() * (dense_lp - hip_lp)).sum(-1).mean().item<double>();
  result.top1_agreement = dense_logits.argmax(-1).eq(hip_logits.argmax(-1)).to(at::kDouble).mean().item<double>();

  auto to_floats = [](const at::Tensor& t) {
    const at::Tensor f = t.to(at::kCPU, at::kFloat).contiguous();
    return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const Capture& cap = captures[static_cast<size_t>(l)];
    LayerInputs in;
    in.heads = cap.q.size(0);
    in.tokens = cap.q.size(1);
    in.dim = cap.q.size(2);
    in.kv_heads = cap.k.size(0);
    in.q = to_floats(cap.q);
    in.k = to_floats(cap.k);
    in.v = to_floats(cap.v);
    result.inputs.push_back(std::move(in));
  }

  for (int64_t l = 0; l < c.n_layers; ++l) {
    report(progress, 0.3 + 0.4 * static_cast<double>(l) / static_cast<double>(c.n_layers), "layer " + std::to_string(l) + " quality");
    const Capture& cap = captures[static_cast<size_t>(l)];
    LayerQuality quality = layer_quality(cap.q, cap.k, cap.v, options.hip.hip, options.random_seed + static_cast<uint64_t>(l));
    quality.layer = l;
    quality.dense = l < options.hip.dense_layers;
    result.layers.push_back(std::move(quality));
  }

  // ---- greedy decoding on both sides ------------------------------------------------------------
  prefilling = false;
  dense_timer = &dense_decode_time;
  hip_timer = &hip_decode_time;
  int32_t dense_next = static_cast<int32_t>(dense_logits[n - 1].argmax().item<int64_t>());
  int32_t hip_next = static_cast<int32_t>(hip_logits[n - 1].argmax().item<int64_t>());
  for (int64_t step = 0; step < options.decode_steps; ++step) {
    report(progress, 0.7 + 0.3 * static_cast<double>(step) / static_cast<double>(options.decode_steps), "decode step " + std::to_string(step));
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
