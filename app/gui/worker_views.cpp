// Worker stages that read plain data only (kernels/, engine/offload/, viz/): no LibTorch here.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <utility>

#include "app/gui/worker.h"
#include "engine/analysis/layer_view.h"
#include "engine/views/locality_view.h"
#include "engine/views/reference_views.h"
#include "engine/views/trace_view.h"
#include "kernels/random_baseline.h"
#include "engine/views/dense_view.h"

namespace hipstudio::gui {

std::string dense_prefill_key(const Request& r) {
  return stage_key(kStageModel, r) + "|P" + std::to_string(std::hash<std::string>{}(r.prompt)) + '|' +
         std::to_string(r.prompt.size()) + "|room" + std::to_string(decode_room(r));
}

Request clamp_selection(const AnalysisView& a, Request r) {
  const auto& inputs = a.analysis->inputs;
  if (a.prompt_run && !a.analysis->layers.empty() && !inputs.empty()) {
    // A live run: any layer of the model (one whose inputs a long prompt did not keep runs a
    // prefill that keeps it).
    r.layer = std::clamp<int64_t>(r.layer, 0, static_cast<int64_t>(a.analysis->layers.size()) - 1);
    r.head = std::clamp<int64_t>(r.head, 0, std::max<int64_t>(0, inputs.front().heads - 1));
    const int64_t bq = a.analysis->options.hip.hip.b_q;
    r.query_block = std::clamp<int64_t>(r.query_block, 0, std::max<int64_t>(0, (a.tokens() + bq - 1) / bq - 1));
    r.delta = std::max<int64_t>(1, r.delta);
    return r;
  }
  if (inputs.empty()) {
    r.layer = std::max<int64_t>(0, r.layer);
    return r;
  }
  // The nearest layer the analysis kept inputs of (a capture may hold a few: --inputs-layers).
  const LayerInputs* nearest = &inputs.front();
  for (const LayerInputs& in : inputs)
    if (std::abs(in.layer - r.layer) < std::abs(nearest->layer - r.layer)) nearest = &in;
  r.layer = nearest->layer;
  const LayerInputs& l = *nearest;
  r.head = std::clamp<int64_t>(r.head, 0, std::max<int64_t>(0, l.heads - 1));
  const int64_t bq = a.analysis->options.hip.hip.b_q;
  r.query_block = std::clamp<int64_t>(r.query_block, 0, std::max<int64_t>(0, (l.tokens + bq - 1) / bq - 1));
  r.delta = std::max<int64_t>(1, r.delta);
  return r;
}

std::shared_ptr<const LayerMaskSnapshot> compute_layer_masks(const std::shared_ptr<const AnalysisView>& a, const Request& r) {
  const auto start = std::chrono::steady_clock::now();
  const PairedAnalysis& pa = *a->analysis;
  std::shared_ptr<const LayerMaskViews> views;
  if (const LayerMaskViews* kept = a->layer_masks(r.layer)) {
    // The views layer computed them (with the prefill or after it); the analysis view owns them.
    views = std::shared_ptr<const LayerMaskViews>(a, kept);
  } else {
    const hip::AttentionInputs in = a->inputs(r.layer);
    const ViewsMath math = r.layer < static_cast<int64_t>(pa.layers.size()) ? pa.layers[static_cast<size_t>(r.layer)].math : ViewsMath{};
    views = std::make_shared<const LayerMaskViews>(reference_layer_masks(
        in, pa.options.hip.hip, math, pa.options.random_seed, r.layer, /*threads=*/0, in.tk <= kOracleMaxTokens));
  }
  auto m = std::make_shared<LayerMaskSnapshot>(std::move(views), a);
  m->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

std::shared_ptr<const TraceView> compute_trace(const LayerMaskSnapshot& m, const Request& r) {
  const hip::AttentionInputs in = m.source->inputs(m.layer);
  return compute_trace(m, r, reference_trace_view(in, m.params, m.layer, r.head, r.query_block));
}

std::shared_ptr<const TraceView> compute_trace(const LayerMaskSnapshot& m, const Request& r, BlockTraceView view) {
  auto t = std::make_shared<TraceView>();
  static_cast<BlockTraceView&>(*t) = std::move(view);
  t->head = r.head;
  t->query_block = r.query_block;
  const int32_t* e = m.hip.row(r.head, r.query_block);
  t->engine_blocks.assign(e, e + m.hip.count(r.head, r.query_block));
  t->steps = viz::trace_steps(t->trace, t->oracle_blocks);
  return t;
}

std::shared_ptr<const DenseView> compute_dense(const AnalysisView& a, const Request& r) {
  const hip::AttentionInputs in = a.inputs(r.layer);
  if (in.tk > kOracleMaxTokens) {  // O(T^2 d) on the CPU: skipped at this length (the view says so)
    auto d = std::make_shared<DenseView>();
    d->layer = r.layer;
    d->head = r.head;
    return d;
  }
  DenseImage image = dense_probability_image(in, a.layer_math(r.layer), r.head, kDenseImageSide);
  return compute_dense(r, viz::HeatGrid{image.rows, image.cols, std::move(image.values)}, "float64 CPU reference");
}

std::shared_ptr<const DenseView> compute_dense(const Request& r, viz::HeatGrid probs, const std::string& source) {
  auto d = std::make_shared<DenseView>();
  d->layer = r.layer;
  d->head = r.head;
  d->source = source;
  d->probs = std::move(probs);
  const DenseImageScale scale = dense_image_scale(d->probs.values);
  d->max_prob = scale.max_prob;
  d->scale_max = scale.scale_max;
  return d;
}

hip::LocalitySample locality_sample(const Request& r, int64_t tokens) { return locality_view_sample(tokens, r.bins, {r.delta}); }

std::shared_ptr<const LocalityView> compute_locality(const AnalysisView& a, const Request& r) {
  const hip::AttentionInputs in = a.inputs(r.layer);
  return std::make_shared<const LocalityView>(
      reference_locality_view(in, a.analysis->options.hip.hip, r.layer, r.head, r.delta, r.bins));
}

std::shared_ptr<const LocalityView> compute_locality(const Request& r, const hip::ScoreLocality& stats,
                                                     const std::string& source) {
  return std::make_shared<const LocalityView>(locality_view_of(stats, r.layer, r.delta, r.bins, source));
}

std::shared_ptr<const OffloadView> compute_offload(const AnalysisView& a, const Request& r,
                                                   const std::function<void()>& checkpoint) {
  auto check = [&] {
    if (checkpoint) checkpoint();
  };
  auto v = std::make_shared<OffloadView>();
  offload::OffloadConfig& c = v->config;
  const auto& opt = a.analysis->options;
  c.cache_factor = r.cache_factor;
  c.k = opt.hip.hip.k;
  c.b_sk = opt.hip.hip.b_sk;
  c.context_tokens = a.tokens() + static_cast<int64_t>(a.analysis->decode.size());
  c.mask_bytes_per_token = a.model.head_dim * a.model.element_bytes;
  c.sparse_bytes_per_token = 2 * a.model.head_dim * a.model.element_bytes;
  check();
  v->result = offload::simulate_offloading(a.analysis->access, c);
  std::vector<int64_t> sizes;
  for (int64_t s = 8; s < 2 * c.context_tokens; s *= 2) sizes.push_back(s);
  sizes.push_back(c.context_tokens);
  // One bank size at a time (each replays independently: the same points as one call over all sizes),
  // so the stage can give way between them.
  for (const auto& [context, curve] : {std::pair{offload::OffloadContext::Mask, &v->mask_curve},
                                       std::pair{offload::OffloadContext::Sparse, &v->sparse_curve}})
    for (int64_t size : sizes) {
      check();
      const std::vector<offload::HitRatioPoint> point = offload::hit_ratio_curve(a.analysis->access, c, context, {size});
      curve->insert(curve->end(), point.begin(), point.end());
    }
  return v;
}

std::shared_ptr<const AnalysisView> synthetic_analysis(int64_t tokens, const Request& r) {
  auto pa = std::make_shared<PairedAnalysis>();
  pa->options.hip = r.hip;
  LayerInputs in;
  in.heads = 2;
  in.kv_heads = 1;
  in.tokens = tokens;
  in.dim = 64;
  in.layer = 0;
  std::mt19937_64 rng(r.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Keys drift slowly (a random walk) so scores have locality, as real keys do.
  LayerInputArrays arrays;
  arrays.k.resize(static_cast<size_t>(tokens * in.dim));
  std::vector<float> walk(static_cast<size_t>(in.dim), 0.0f);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < in.dim; ++c) {
      walk[static_cast<size_t>(c)] = 0.98f * walk[static_cast<size_t>(c)] + 0.2f * normal(rng);
      arrays.k[static_cast<size_t>(t * in.dim + c)] = walk[static_cast<size_t>(c)] + 0.3f * normal(rng);
    }
  arrays.q.resize(static_cast<size_t>(in.heads * tokens * in.dim));
  for (float& x : arrays.q) x = normal(rng);
  arrays.v = arrays.k;
  in.set_host(std::move(arrays));
  pa->inputs.push_back(std::move(in));
  pa->layers.resize(1);
  pa->layers[0].heads.resize(2);
  pa->prompt_ids.assign(static_cast<size_t>(tokens), 0);
  auto v = std::make_shared<AnalysisView>();
  v->analysis = pa;
  v->model.display_name = "synthetic " + std::to_string(tokens) + "-token Q/K (no model)";
  v->model.architecture = "synthetic";
  v->model.synthetic = true;
  v->model.n_layers = 1;
  v->model.full_attention_layers = 1;
  v->model.n_heads = 2;
  v->model.n_kv_heads = 1;
  v->model.head_dim = 64;
  v->model.max_seq_len = tokens;
  v->model.device = "cpu (no model: random Q/K)";
  for (int64_t t = 0; t < tokens; ++t) v->prompt_tokens.push_back("t" + std::to_string(t));
  return v;
}

}  // namespace hipstudio::gui
