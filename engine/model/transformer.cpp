#include "engine/model/transformer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include "engine/model/context_plan.h"
#include "engine/model/device_timer.h"

namespace hipstudio {

namespace {

// x: [T, in], w: [out, in] -> [T, out]. One row goes through a matrix-vector product: on the CPU,
// gemv streams the weights once and is ~2.7x faster than a one-row gemm in LibTorch 1.13.
at::Tensor project(const at::Tensor& x, const at::Tensor& w) {
  if (x.size(0) == 1) return at::mv(w, x[0]).unsqueeze(0);
  return at::matmul(x, w.t());
}

// RMSNorm in float32 (weight is float32), result in x's dtype.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * weight;
  return normed.to(x.scalar_type());
}

}  // namespace

Transformer::Transformer(std::shared_ptr<const Model> model, int64_t max_positions)
    : model_(std::move(model)), max_positions_(max_positions),
      rows_per_block_(model_->run.device.is_cuda() ? kCudaPrefillRows : std::numeric_limits<int64_t>::max()) {
  const auto options = at::TensorOptions().device(model_->run.device).dtype(model_->run.dtype);
  rope_ = make_rope_tables(model_->config, max_positions, options);
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
  return project(normed, model_->weights.classifier).to(at::kFloat);
}

at::Tensor Transformer::forward_hidden(const std::vector<int32_t>& tokens, KVCache& cache, AttentionBackend& attention,
                                       Phase phase) const {
  c10::InferenceMode inference;
  const ModelConfig& c = model_->config;
  const ModelWeights& w = model_->weights;
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t start = cache.length();
  if (T == 0) throw std::invalid_argument("forward needs at least one token");
  if (start + T > max_positions_ || start + T > cache.capacity())
    throw std::logic_error("forward past the prepared context: " + std::to_string(start + T) + " positions");

  at::Tensor ids = at::tensor(at::IntArrayRef(std::vector<int64_t>(tokens.begin(), tokens.end())), at::kLong)
                       .to(model_->run.device);
  at::Tensor x = w.embedding.index_select(0, ids);  // [T, dim]
  const int64_t qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
  // Row-wise work (norms, projections, RoPE, MLP) runs in blocks of `rows` to bound activations;
  // attention sees the call's rows at once, so a whole prompt is one causal attention call per layer.
  const int64_t rows = std::min(T, rows_per_block_);
  const auto options = x.options();

  const bool cuda = model_->run.device.is_cuda();
  DeviceTimer layer_time(cuda), attention_time(cuda);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (timer_) layer_time.start();
    double attention_seconds = 0.0;
    const LayerWeights& layer = w.layers[l];
    // Attention inputs: fused q/k/v projection, rotary embeddings, keys/values into the cache.
    at::Tensor q = rows == T ? at::Tensor() : at::empty({c.n_heads, T, hd}, options);
    for (int64_t r = 0; r < T; r += rows) {
      const int64_t n = std::min(rows, T - r);
      at::Tensor h = rms_norm(x.narrow(0, r, n), layer.attn_norm, c.rms_norm_eps);
      at::Tensor qkv = project(h, layer.wqkv);  // [n, qd + 2 kvd]
      if (layer.bqkv.defined()) qkv = qkv + layer.bqkv;
      at::Tensor qr = qkv.narrow(1, 0, qd).view({n, c.n_heads, hd}).transpose(0, 1);
      at::Tensor kr = qkv.narrow(1, qd, kvd).view({n, c.n_kv_heads, hd}).transpose(0, 1);
      at::Tensor vr = qkv.narrow(1, qd + kvd, kvd).view({n, c.n_kv_heads, hd}).transpose(0, 1);
      qr = apply_rope(qr, rope_, start + r);
      cache.append(l, apply_rope(kr, rope_, start + r), vr, /*offset=*/r);
      if (rows == T) q = qr.contiguous();
      else q.narrow(1, r, n).copy_(qr);
    }
    AttentionCall call;
    call.layer = l;
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
      at::Tensor xr = x.narrow(0, r, n);
      xr = xr + project(by_row.narrow(0, r, n).reshape({n, qd}), layer.wo);
      // SwiGLU MLP: down(silu(gate(h)) * up(h)).
      at::Tensor h = rms_norm(xr, layer.mlp_norm, c.rms_norm_eps);
      at::Tensor gate_up = project(h, layer.w13);  // [n, 2 hidden]
      at::Tensor act = at::silu(gate_up.narrow(1, 0, c.hidden_dim)) * gate_up.narrow(1, c.hidden_dim, c.hidden_dim);
      xr = xr + project(act, layer.w2);
      if (rows == T) x = xr;
      else x.narrow(0, r, n).copy_(xr);
    }
    if (timer_) timer_(l, attention_seconds, layer_time.stop_seconds() - attention_seconds);
  }
  cache.advance(T);
  return x;
}

}  // namespace hipstudio
