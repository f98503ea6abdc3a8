#include "engine/model/layer_math.h"

#include <ATen/ATen.h>

#include "engine/model/rope.h"

namespace hipstudio {

at::Tensor project(const at::Tensor& x, const at::Tensor& w) {
  if (x.size(0) == 1) return at::mv(w, x[0]).unsqueeze(0);
  return at::matmul(x, w.t());
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * weight;
  return normed.to(x.scalar_type());
}

AttentionInputs attention_inputs(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                 const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t n = x.size(0), qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
  at::Tensor h = rms_norm(x, layer.attn_norm, c.rms_norm_eps);
  at::Tensor qkv = project(h, layer.wqkv);  // [n, qd + 2 kvd]
  if (layer.bqkv.defined()) qkv = qkv + layer.bqkv;
  AttentionInputs r;
  r.q = rotate_rows(qkv.narrow(1, 0, qd).view({n, c.n_heads, hd}).transpose(0, 1), cos, sin);
  r.k = rotate_rows(qkv.narrow(1, qd, kvd).view({n, c.n_kv_heads, hd}).transpose(0, 1), cos, sin);
  r.v = qkv.narrow(1, qd + kvd, kvd).view({n, c.n_kv_heads, hd}).transpose(0, 1);
  return r;
}

at::Tensor attention_output_and_mlp(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                    const at::Tensor& attended) {
  at::Tensor y = x + project(attended, layer.wo);
  at::Tensor h = rms_norm(y, layer.mlp_norm, c.rms_norm_eps);
  at::Tensor gate_up = project(h, layer.w13);  // [n, 2 hidden]
  at::Tensor act = at::silu(gate_up.narrow(1, 0, c.hidden_dim)) * gate_up.narrow(1, c.hidden_dim, c.hidden_dim);
  return y + project(act, layer.w2);
}

}  // namespace hipstudio
