#include "engine/model/transformer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include "engine/analysis/context_plan.h"
#include "engine/runtime/device_timer.h"
#include "engine/model/layer_math.h"

namespace hipstudio {

Transformer::Transformer(std::shared_ptr<const Model> model, int64_t max_positions)
    : model_(std::move(model)), max_positions_(max_positions),
      rows_per_block_(model_->run.device.is_cuda() ? kCudaPrefillRows : std::numeric_limits<int64_t>::max()) {
  const ModelConfig& c = model_->config;
  const auto options = at::TensorOptions().device(model_->run.device).dtype(model_->run.dtype);
  rope_ = make_rope_tables(c.rope, c.head_dim, max_positions, options);
  // A second table only where windowed layers rotate with other parameters (Gemma 3's local base).
  bool windowed = false;
  for (int64_t l = 0; l < c.n_layers; ++l) windowed = windowed || c.window(l) > 0;
  const RopeParams &a = c.rope, &b = c.rope_local;
  const bool same = a.type == b.type && a.theta == b.theta && a.factor == b.factor &&
                    a.low_freq_factor == b.low_freq_factor && a.high_freq_factor == b.high_freq_factor &&
                    a.original_max_position_embeddings == b.original_max_position_embeddings &&
                    a.short_factor == b.short_factor && a.long_factor == b.long_factor &&
                    a.attention_factor == b.attention_factor;
  rope_local_ = windowed && !same ? make_rope_tables(b, c.head_dim, max_positions, options) : rope_;
  for (int64_t l = 0; l < c.n_layers; ++l) layer_rope_.push_back(c.window(l) > 0 ? rope_local_.table : rope_.table);
}

at::Tensor Transformer::forward(const std::vector<int32_t>& tokens, KVCache& cache, AttentionBackend& attention,
                                LogitsFor which, Phase phase) const {
  c10::InferenceMode inference;
  at::Tensor x = forward_hidden(tokens, cache, attention, phase);
  if (which == LogitsFor::LastToken) x = x.narrow(0, x.size(0) - 1, 1);
  return logits_of(x).to(at::kCPU);
}

at::Tensor Transformer::logits_of(const at::Tensor& hidden) const {
  c10::InferenceMode inference;
  const at::Tensor normed = rms_norm(hidden, model_->weights.final_norm, model_->config.rms_norm_eps);
  // The final soft-cap (Gemma 2) in float32, on every path that makes logits.
  return soft_cap_logits(project(normed, model_->weights.classifier).to(at::kFloat), model_->config.final_softcap);
}

at::Tensor Transformer::forward_hidden(const std::vector<int32_t>& tokens, KVCache& cache, AttentionBackend& attention,
                                       Phase phase) const {
  c10::InferenceMode inference;
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t start = cache.length();
  if (T == 0) throw std::invalid_argument("forward needs at least one token");
  if (start + T > max_positions_ || start + T > cache.capacity())
    throw std::logic_error("forward past the prepared context: " + std::to_string(start + T) + " positions");

  last_step_graphed_ = false;
  last_step_attention_from_ = -1;
  if (T == 1 && phase == Phase::Decode && decodes_by_graphs()) {
    prepare_decode_graphs(cache, attention);
    at::Tensor x = graph_->step(tokens.front(), cache, attention);
    cache.advance(1);
    last_step_graphed_ = true;
    last_step_attention_from_ = graph_->last_graphed_attention_from();
    return x;
  }

  return run_layers(0, model_->config.n_layers, embed(tokens), cache, attention, phase, nullptr);
}

bool Transformer::decodes_by_graphs() const {
  return decode_graphs_ && !timer_ && model_->run.device.is_cuda() && DecodeGraph::supported();
}

void Transformer::prepare_decode_graphs(KVCache& cache, AttentionBackend& attention) const {
  // A full cache takes no step (forward refuses it), and the captures' eager passes write its next slot.
  if (!decodes_by_graphs() || cache.length() >= std::min(cache.capacity(), max_positions_)) return;
  c10::InferenceMode inference;
  if (!graph_ || !graph_->serves(cache)) {
    graph_.reset();  // releases the previous cache before capturing for this one
    graph_ = std::make_unique<DecodeGraph>(*model_, layer_rope_, cache);
  }
  graph_->prepare_attention(attention, cache);
}

at::Tensor Transformer::embed(const std::vector<int32_t>& tokens) const {
  c10::InferenceMode inference;
  at::Tensor ids = at::tensor(at::IntArrayRef(std::vector<int64_t>(tokens.begin(), tokens.end())), at::kLong)
                       .to(model_->run.device);
  return embed_tokens(*model_, ids);  // [T, dim]
}

at::Tensor Transformer::forward_hidden_from(int64_t first, const at::Tensor& input, KVCache& cache, AttentionBackend& attention,
                                            EntryStreams* entries, int64_t last) const {
  c10::InferenceMode inference;
  const int64_t T = input.size(0), start = cache.length(), layers = model_->config.n_layers;
  if (last < 0) last = layers;
  if (first < 0 || last > layers || first > last)
    throw std::logic_error("forward_hidden_from: no layers [" + std::to_string(first) + ", " + std::to_string(last) + ")");
  if (T == 0 || start + T > max_positions_ || start + T > cache.capacity())
    throw std::logic_error("forward_hidden_from past the prepared context: " + std::to_string(start + T) + " positions");
  last_step_graphed_ = false;
  last_step_attention_from_ = -1;
  if (entries) {
    entries->reset();
    // The stream entering `first` is the input itself (not modified: the layers work on a copy).
    if (first >= entries->first_layer && first <= entries->last_layer)
      entries->streams[static_cast<size_t>(first - entries->first_layer)] = input;
  }
  if (first == last) {  // nothing to run: the stream entering `last` is the input
    cache.advance(T);
    return input;
  }
  // The layers write the stream in place (blocks of rows): `input` must stay for the next re-run.
  return run_layers(first, last, input.clone(), cache, attention, Phase::Prefill, entries);
}

at::Tensor Transformer::run_layers(int64_t first, int64_t last, at::Tensor x, KVCache& cache, AttentionBackend& attention,
                                   Phase phase, EntryStreams* entries) const {
  const ModelConfig& c = model_->config;
  const ModelWeights& w = model_->weights;
  const int64_t T = x.size(0), start = cache.length();
  const int64_t qd = c.q_dim(), hd = c.head_dim;
  // Row-wise work (norms, projections, RoPE, MLP) runs in blocks of `rows` to bound activations;
  // attention sees the call's rows at once, so a whole prompt is one causal attention call per layer.
  const int64_t rows = std::min(T, rows_per_block_);
  const auto options = x.options();

  const bool cuda = model_->run.device.is_cuda();
  DeviceTimer layer_time(cuda), attention_time(cuda);
  for (int64_t l = first; l < last; ++l) {
    if (entries && l >= entries->first_layer && l <= entries->last_layer) {
      at::Tensor& kept = entries->streams[static_cast<size_t>(l - entries->first_layer)];
      if (!kept.defined()) kept = x.clone();
    }
    if (timer_) layer_time.start();
    double attention_seconds = 0.0;
    const LayerWeights& layer = w.layers[l];
    // Attention inputs: fused q/k/v projection, rotary embeddings, keys/values into the cache.
    at::Tensor q = rows == T ? at::Tensor() : at::empty({c.n_heads, T, hd}, options);
    for (int64_t r = 0; r < T; r += rows) {
      const int64_t n = std::min(rows, T - r);
      const RotatedQkv in = attention_inputs(c, layer, x.narrow(0, r, n), rope_table(l).narrow(0, start + r, n));
      cache.append(l, in.k, in.v, /*offset=*/r);
      if (rows == T) q = in.q.contiguous();
      else q.narrow(1, r, n).copy_(in.q);
    }
    AttentionCall call;
    call.layer = l;
    call.math = layer_attention_math(c, l);
    call.q = q;
    call.k = cache.keys(l, start + T);
    call.v = cache.values(l, start + T);
    call.first_position = start;
    call.decoding = phase == Phase::Decode;
    if (timer_) attention_time.start();
    at::Tensor attended = attention.attend(call);  // [n_heads, T, hd]
    if (timer_) attention_seconds = attention_time.stop_seconds();
    at::Tensor by_row = attended.transpose(0, 1);  // [T, n_heads, hd]
    for (int64_t r = 0; r < T; r += rows) {
      const int64_t n = std::min(rows, T - r);
      at::Tensor y = attention_output_and_mlp(c, layer, x.narrow(0, r, n), by_row.narrow(0, r, n).reshape({n, qd}));
      if (rows == T) x = y;
      else x.narrow(0, r, n).copy_(y);
    }
    if (timer_) timer_(l, attention_seconds, layer_time.stop_seconds() - attention_seconds);
  }
  cache.advance(T);
  return x;
}

}  // namespace hipstudio
