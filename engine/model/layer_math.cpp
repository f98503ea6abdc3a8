#include "engine/model/layer_math.h"

#include <ATen/ATen.h>

#include "engine/model/rope.h"

// The fused RMSNorm and matrix-vector kernels run on LibTorch's current stream (so CUDA graphs
// capture them), which needs a CUDA LibTorch's headers; with CPU LibTorch the LibTorch form serves
// every device.
#if defined(HIPSTUDIO_TORCH_CUDA) && defined(HIPSTUDIO_HAVE_CUDA_KERNELS) && __has_include(<ATen/cuda/CUDAContext.h>)
#define HIPSTUDIO_FUSED_LAYER_KERNELS 1
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>

#include "kernels/cuda/row_gemv.h"
#include "kernels/cuda/row_norm.h"
#include "kernels/cuda/rope_cache.h"
#endif

namespace hipstudio {

namespace {

#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
bool fused_norm_applies(const at::Tensor& x, const at::Tensor& weight) {
  return x.is_cuda() && x.dim() == 2 && x.stride(1) == 1 && weight.scalar_type() == at::kFloat && weight.is_contiguous() &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf);
}

gpu::ElementType kernel_dtype(at::ScalarType t) {
  return t == at::kBFloat16 ? gpu::ElementType::kBF16 : t == at::kHalf ? gpu::ElementType::kF16 : gpu::ElementType::kF32;
}

// out = rms_norm(x (+ residual)); with a residual, sum receives x + residual.
void fused_norm(const at::Tensor& x, const at::Tensor* residual, at::Tensor* sum, const at::Tensor& weight, double eps,
                at::Tensor& out) {
  gpu::RowNormLaunch l;
  l.x = x.data_ptr();
  l.row_stride = x.stride(0);
  if (residual) {
    l.residual = residual->data_ptr();
    l.residual_stride = residual->stride(0);
    l.sum = sum->data_ptr();
  }
  l.weight = weight.data_ptr<float>();
  l.out = out.data_ptr();
  l.dtype = kernel_dtype(x.scalar_type());
  l.rows = x.size(0);
  l.dim = x.size(1);
  l.eps = eps;
  l.stream = at::cuda::getCurrentCUDAStream().stream();
  gpu::rms_norm_rows(l);
}

// y = [residual +] w x for one row x [1, in] (silu_mul: [1, 2 in] = [gate | up], x = silu(gate) * up)
// on the row_gemv kernel, which reads the weights faster than cuBLAS's gemv (kernels/cuda/row_gemv.h).
// Returns an undefined tensor where the kernel does not apply (CPU, f32, another device than the
// current one, a layout it refuses): the caller's LibTorch form computes the same function then.
// The RMSNorm fused in front of row_gemv's product: x -> rms_norm(x [+ residual]) with weight.
struct FusedNorm {
  const at::Tensor* weight = nullptr;    // float32 (in); null: no norm
  double eps = 1e-5;
  const at::Tensor* residual = nullptr;  // optional [1, in], the row's dtype
  at::Tensor* sum = nullptr;             // with residual: receives x + residual [1, in]
};

// With `rope` (everything but its qkv, dtype and stream set; its q points into `rope_q`), the RoPE
// epilogue instead of y: returns rope_q when the kernel ran.
at::Tensor row_gemv(const at::Tensor& x, const at::Tensor& w, bool silu_mul, const at::Tensor* residual,
                    const FusedNorm& norm = {}, bool next_starts_early = false,
                    const gpu::RopeCacheLaunch* rope = nullptr, const at::Tensor* rope_q = nullptr) {
  const at::ScalarType t = w.scalar_type();
  if (!w.is_cuda() || (t != at::kBFloat16 && t != at::kHalf) || w.dim() != 2 || w.stride(1) != 1) return {};
  if (x.device() != w.device() || x.get_device() != c10::cuda::current_device() || x.scalar_type() != t ||
      x.dim() != 2 || x.size(0) != 1 || x.size(1) != (silu_mul ? 2 : 1) * w.size(1) || x.stride(1) != 1)
    return {};
  if (residual && (residual->device() != w.device() || residual->scalar_type() != t || residual->numel() != w.size(0) ||
                   !residual->is_contiguous()))
    return {};
  if (norm.weight && (norm.weight->device() != w.device() || norm.weight->scalar_type() != at::kFloat ||
                      norm.weight->numel() != w.size(1) || !norm.weight->is_contiguous()))
    return {};
  if (norm.residual && (norm.residual->device() != w.device() || norm.residual->scalar_type() != t ||
                        norm.residual->sizes() != x.sizes() || !norm.residual->is_contiguous()))
    return {};
  gpu::RowGemvLaunch l;
  l.w = w.data_ptr();
  l.x = x.data_ptr();
  l.residual = residual ? residual->data_ptr() : nullptr;
  l.dtype = kernel_dtype(t);
  l.n = w.size(0);
  l.in = w.size(1);
  l.w_stride = w.stride(0);
  l.silu_mul = silu_mul;
  l.next_starts_early = next_starts_early;
  at::Tensor sum;
  if (norm.weight) {
    l.norm_weight = norm.weight->data_ptr<float>();
    l.eps = norm.eps;
    if (norm.residual) {
      sum = at::empty(x.sizes(), x.options());
      l.norm_residual = norm.residual->data_ptr();
      l.norm_sum = sum.data_ptr();
    }
  }
  at::Tensor y = rope ? at::Tensor() : at::empty({1, w.size(0)}, x.options());
  l.y = rope ? nullptr : y.data_ptr();
  l.rope = rope;
  if (*gpu::row_gemv_refusal(l) != '\0') return {};
  l.stream = at::cuda::getCurrentCUDAStream().stream();
  gpu::row_gemv(l);
  if (norm.sum) *norm.sum = sum;
  return rope ? *rope_q : y;
}
#endif

at::Tensor aten_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * weight;
  return normed.to(x.scalar_type());
}

// The gate activation of the architecture (SiLU or GELU-tanh) times up, for gate_up [n, 2 hidden].
at::Tensor gated_activation(const ModelConfig& c, const at::Tensor& gate_up) {
  const at::Tensor gate = gate_up.narrow(1, 0, c.hidden_dim), up = gate_up.narrow(1, c.hidden_dim, c.hidden_dim);
  return (c.activation == Activation::kGeluTanh ? at::gelu(gate, "tanh") : at::silu(gate)) * up;
}

// The rest of the MLP: residual + [post_mlp_norm](down(act(gate) * up) [+ b2]) for gate_up
// [n, 2 hidden] (its bias added). One row of the plain SwiGLU on CUDA is one kernel (activation,
// projection and add; float32 inside, rounded once); elsewhere, and for every other architecture,
// LibTorch ops, which round the activation and the projection to the dtype on the way.
at::Tensor down_projection_add(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& residual,
                               const at::Tensor& gate_up) {
  const bool plain_swiglu = c.activation == Activation::kSilu && !layer.b2.defined() && !layer.post_mlp_norm.defined();
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  if (plain_swiglu && gate_up.size(0) == 1) {  // the next kernel starts early: attention_output_and_mlp says why
    at::Tensor y = row_gemv(gate_up, layer.w2, /*silu_mul=*/true, &residual, {}, /*next_starts_early=*/true);
    if (y.defined()) return y;
  }
#endif
  if (plain_swiglu) return residual + project(gated_activation(c, gate_up), layer.w2);
  at::Tensor down = project(gated_activation(c, gate_up), layer.w2);
  if (layer.b2.defined()) down = down + layer.b2;
  if (layer.post_mlp_norm.defined()) down = rms_norm(down, layer.post_mlp_norm, c.rms_norm_eps);
  return residual + down;
}

}  // namespace

bool fused_rms_norm_built() {
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  return true;
#else
  return false;
#endif
}

at::Tensor project(const at::Tensor& x, const at::Tensor& w) {
  if (x.size(0) != 1) return at::matmul(x, w.t());
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  at::Tensor y = row_gemv(x, w, /*silu_mul=*/false, nullptr);
  if (y.defined()) return y;
#endif
  return at::mv(w, x[0]).unsqueeze(0);
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  if (fused_norm_applies(x, weight)) {
    at::Tensor out = at::empty(x.sizes(), x.options());
    fused_norm(x, nullptr, nullptr, weight, eps, out);
    return out;
  }
#endif
  return aten_rms_norm(x, weight, eps);
}

SumAndNorm add_rms_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps) {
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  if (fused_norm_applies(x, weight) && residual.sizes() == x.sizes() && residual.scalar_type() == x.scalar_type() &&
      residual.stride(1) == 1) {
    SumAndNorm r{at::empty(x.sizes(), x.options()), at::empty(x.sizes(), x.options())};
    fused_norm(x, &residual, &r.sum, weight, eps, r.normed);
    return r;
  }
#endif
  at::Tensor sum = x + residual;
  return {sum, aten_rms_norm(sum, weight, eps)};
}

AttentionMath layer_attention_math(const ModelConfig& c, int64_t layer) {
  AttentionMath m;
  m.window = c.window(layer);
  m.scale = c.attention_scale;
  m.softcap = c.attn_softcap;
  m.full_rank = -1;
  if (m.window == 0) {
    m.full_rank = 0;
    for (int64_t l = 0; l < layer; ++l) m.full_rank += c.window(l) == 0 ? 1 : 0;
  }
  return m;
}

bool plain_attention_math(const ModelConfig& c) {
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (!layer_attention_math(c, l).plain(c.head_dim)) return false;
  return true;
}

at::Tensor embed_tokens(const Model& model, const at::Tensor& ids) {
  const at::Tensor rows = model.weights.embedding.index_select(0, ids);  // [T, dim]
  if (model.config.embedding_scale == 1.0) return rows;
  // transformers multiplies by the scale as a tensor of the run dtype: rounded to it first.
  // (On the host: the step's graph captures only the multiply.)
  const double rounded = at::scalar_tensor(model.config.embedding_scale, at::TensorOptions().dtype(rows.scalar_type()))
                             .item<double>();
  return rows * rounded;
}

at::Tensor soft_cap_logits(const at::Tensor& logits, double cap) {
  return cap > 0.0 ? at::tanh(logits / cap) * cap : logits;
}

at::Tensor head_norms(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& qkv) {
  const int64_t n = qkv.size(0), qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
  const at::Tensor q = rms_norm(qkv.narrow(1, 0, qd).reshape({n * c.n_heads, hd}), layer.q_norm, c.rms_norm_eps);
  const at::Tensor k = rms_norm(qkv.narrow(1, qd, kvd).reshape({n * c.n_kv_heads, hd}), layer.k_norm, c.rms_norm_eps);
  return at::cat({q.view({n, qd}), k.view({n, kvd}), qkv.narrow(1, qd + kvd, kvd)}, 1);
}

at::Tensor attention_qkv(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x) {
  at::Tensor qkv;  // [n, qd + 2 kvd]
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  if (x.size(0) == 1) {  // a decode step: the norm inside the projection's kernel, one launch fewer
    FusedNorm norm;
    norm.weight = &layer.attn_norm;
    norm.eps = c.rms_norm_eps;
    // A decode graph takes this form where rotated_qkv_cached_row's one kernel does not apply: the
    // RoPE kernel next only waits for it (rotate_and_cache_row), and HiP's attention or mask search
    // after that sets up meanwhile (kernels/cuda/row_gemv.h, next_starts_early); where a plain
    // launch comes next (a bias add, LibTorch's RoPE) the early start changes nothing.
    qkv = row_gemv(x, layer.wqkv, /*silu_mul=*/false, nullptr, norm, /*next_starts_early=*/true);
  }
#endif
  if (!qkv.defined()) qkv = project(rms_norm(x, layer.attn_norm, c.rms_norm_eps), layer.wqkv);
  if (layer.bqkv.defined()) qkv = qkv + layer.bqkv;
  if (c.qk_norm) qkv = head_norms(c, layer, qkv);
  return qkv;
}

RotatedQkv rotate_qkv(const ModelConfig& c, const at::Tensor& qkv, const at::Tensor& rope_rows) {
  const int64_t n = qkv.size(0), qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
  // q and k rotate as one tensor of n_heads + n_kv_heads heads.
  const at::Tensor qk = rotate_rows(qkv.narrow(1, 0, qd + kvd).view({n, c.n_heads + c.n_kv_heads, hd}).transpose(0, 1),
                                    rope_rows);
  RotatedQkv r;
  r.q = qk.narrow(0, 0, c.n_heads);
  r.k = qk.narrow(0, c.n_heads, c.n_kv_heads);
  r.v = qkv.narrow(1, qd + kvd, kvd).view({n, c.n_kv_heads, hd}).transpose(0, 1);
  return r;
}

RotatedQkv attention_inputs(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                 const at::Tensor& rope_rows) {
  return rotate_qkv(c, attention_qkv(c, layer, x), rope_rows);
}

#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
namespace {

// Whether the RoPE kernel (or row_gemv's RoPE epilogue) takes a row of dtype t on `device`: the
// table, position and cache on that device, in the layouts rope_cache.h reads.
bool rope_cache_fits(const ModelConfig& c, at::ScalarType t, const at::Device& device, const at::Tensor& table,
                     const at::Tensor& position, const at::Tensor& keys, const at::Tensor& values) {
  return device.is_cuda() && device.index() == c10::cuda::current_device() &&
         (t == at::kFloat || t == at::kBFloat16 || t == at::kHalf) && table.device() == device &&
         table.scalar_type() == t && table.is_contiguous() && table.dim() == 3 && table.size(1) == 2 &&
         table.size(2) == c.head_dim && position.device() == device && position.scalar_type() == at::kLong &&
         position.numel() == 1 && keys.device() == device && values.device() == device && keys.scalar_type() == t &&
         values.scalar_type() == t && keys.dim() == 3 && values.dim() == 3 && keys.stride(2) == 1 &&
         values.stride(2) == 1 && c.head_dim <= 1024;
}

// The launch of the RoPE and cache write into q (qkv, dtype and stream left to the caller).
gpu::RopeCacheLaunch rope_cache_launch(const ModelConfig& c, const at::Tensor& q, const at::Tensor& table,
                                       const at::Tensor& position, const at::Tensor& keys, const at::Tensor& values) {
  gpu::RopeCacheLaunch l;
  l.table = table.data_ptr();
  l.position = position.data_ptr<int64_t>();
  l.q = q.data_ptr();
  l.keys = keys.data_ptr();
  l.values = values.data_ptr();
  l.keys_head_stride = keys.stride(0), l.keys_row_stride = keys.stride(1);
  l.values_head_stride = values.stride(0), l.values_row_stride = values.stride(1);
  l.n_heads = c.n_heads, l.n_kv_heads = c.n_kv_heads, l.head_dim = c.head_dim;
  return l;
}

}  // namespace
#endif

at::Tensor rotate_and_cache_row(const ModelConfig& c, const at::Tensor& qkv, const at::Tensor& table,
                                const at::Tensor& position, const at::Tensor& keys, const at::Tensor& values) {
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  const bool fits = qkv.dim() == 2 && qkv.size(0) == 1 && qkv.is_contiguous() &&
                    qkv.size(1) == c.q_dim() + 2 * c.kv_dim() &&
                    rope_cache_fits(c, qkv.scalar_type(), qkv.device(), table, position, keys, values);
  if (fits) {
    at::Tensor q = at::empty({c.n_heads, 1, c.head_dim}, qkv.options());
    gpu::RopeCacheLaunch l = rope_cache_launch(c, q, table, position, keys, values);
    l.qkv = qkv.data_ptr();
    l.dtype = kernel_dtype(qkv.scalar_type());
    l.stream = at::cuda::getCurrentCUDAStream().stream();
    gpu::rope_cache_write(l);
    return q;
  }
#endif
  const RotatedQkv in = rotate_qkv(c, qkv, table.index_select(0, position));
  keys.index_copy_(1, position, in.k);
  values.index_copy_(1, position, in.v);
  return in.q;
}

at::Tensor rotated_qkv_cached_row(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                  const at::Tensor& table, const at::Tensor& position, const at::Tensor& keys,
                                  const at::Tensor& values) {
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  if (x.size(0) == 1 && !layer.bqkv.defined() && !c.qk_norm && layer.wqkv.size(0) == c.q_dim() + 2 * c.kv_dim() &&
      rope_cache_fits(c, x.scalar_type(), x.device(), table, position, keys, values)) {
    const at::Tensor q = at::empty({c.n_heads, 1, c.head_dim}, x.options());
    const gpu::RopeCacheLaunch rope = rope_cache_launch(c, q, table, position, keys, values);
    FusedNorm norm;
    norm.weight = &layer.attn_norm;
    norm.eps = c.rms_norm_eps;
    // The attention or mask search next starts at once, as after the RoPE kernel before (row_gemv.h,
    // next_starts_early): its part before its wait reads only keys of earlier steps and the cached mask.
    const at::Tensor got = row_gemv(x, layer.wqkv, /*silu_mul=*/false, nullptr, norm, /*next_starts_early=*/true,
                                    &rope, &q);
    if (got.defined()) return got;
  }
#endif
  return rotate_and_cache_row(c, attention_qkv(c, layer, x), table, position, keys, values);
}

namespace {

// The MLP half after the output projection `out` (its bias added), in the form that takes any row
// count: [post_attn_norm], residual add and RMSNorm, gate/up (+ bias), the activation, down and the
// residual add.
at::Tensor add_rms_norm_mlp(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x, const at::Tensor& out) {
  const SumAndNorm y = add_rms_norm(x, attention_residual(c, layer, out), layer.mlp_norm, c.rms_norm_eps);
  at::Tensor gate_up = project(y.normed, layer.w13);  // [n, 2 hidden]
  if (layer.b13.defined()) gate_up = gate_up + layer.b13;
  return down_projection_add(c, layer, y.sum, gate_up);
}

}  // namespace

at::Tensor attention_residual(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& out) {
  at::Tensor r = layer.bo.defined() ? out + layer.bo : out;
  return layer.post_attn_norm.defined() ? rms_norm(r, layer.post_attn_norm, c.rms_norm_eps) : r;
}

at::Tensor attention_output_and_mlp(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                    const at::Tensor& attended) {
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  if (x.size(0) == 1) {  // a decode step: the residual add and norm inside the gate/up kernel
    // Each of the three projections lets the next kernel start at once (next_starts_early): the
    // next is the following projection here, or the next layer's q/k/v projection (a LibTorch
    // launch or a copy where the step ends), whose part before its wait reads only weights. So a
    // multiprocessor whose blocks of one projection are done takes the next one's block and starts
    // its weight loads meanwhile (the probe's chain of an 8B layer: 158.2 against 160.3 us,
    // kernels/BENCHMARKS_HISTORY.md). Biases and sandwich norms are LibTorch ops between
    // them (where a plain launch comes next the early start changes nothing).
    at::Tensor out = row_gemv(attended, layer.wo, /*silu_mul=*/false, nullptr, {}, /*next_starts_early=*/true);
    if (!out.defined()) out = project(attended, layer.wo);
    out = attention_residual(c, layer, out);
    FusedNorm norm;
    norm.weight = &layer.mlp_norm;
    norm.eps = c.rms_norm_eps;
    norm.residual = &out;
    at::Tensor sum;
    norm.sum = &sum;
    at::Tensor gate_up = row_gemv(x, layer.w13, /*silu_mul=*/false, nullptr, norm, /*next_starts_early=*/true);
    if (gate_up.defined()) {
      if (layer.b13.defined()) gate_up = gate_up + layer.b13;
      return down_projection_add(c, layer, sum, gate_up);
    }
    const SumAndNorm y = add_rms_norm(x, out, layer.mlp_norm, c.rms_norm_eps);
    gate_up = project(y.normed, layer.w13);
    if (layer.b13.defined()) gate_up = gate_up + layer.b13;
    return down_projection_add(c, layer, y.sum, gate_up);
  }
#endif
  return add_rms_norm_mlp(c, layer, x, project(attended, layer.wo));
}

}  // namespace hipstudio
