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
#endif

namespace hipstudio {

namespace {

#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
bool fused_norm_applies(const at::Tensor& x, const at::Tensor& weight) {
  return x.is_cuda() && x.dim() == 2 && x.stride(1) == 1 && weight.scalar_type() == at::kFloat && weight.is_contiguous() &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf);
}

gpu::DType kernel_dtype(at::ScalarType t) {
  return t == at::kBFloat16 ? gpu::DType::kBF16 : t == at::kHalf ? gpu::DType::kF16 : gpu::DType::kF32;
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
at::Tensor row_gemv(const at::Tensor& x, const at::Tensor& w, bool silu_mul, const at::Tensor* residual) {
  const at::ScalarType t = w.scalar_type();
  if (!w.is_cuda() || (t != at::kBFloat16 && t != at::kHalf) || w.dim() != 2 || w.stride(1) != 1) return {};
  if (x.device() != w.device() || x.get_device() != c10::cuda::current_device() || x.scalar_type() != t ||
      x.dim() != 2 || x.size(0) != 1 || x.size(1) != (silu_mul ? 2 : 1) * w.size(1) || x.stride(1) != 1)
    return {};
  if (residual && (residual->device() != w.device() || residual->scalar_type() != t || residual->numel() != w.size(0) ||
                   !residual->is_contiguous()))
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
  if (*gpu::row_gemv_refusal(l) != '\0') return {};
  at::Tensor y = at::empty({1, w.size(0)}, x.options());
  l.y = y.data_ptr();
  l.stream = at::cuda::getCurrentCUDAStream().stream();
  gpu::row_gemv(l);
  return y;
}
#endif

at::Tensor aten_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * weight;
  return normed.to(x.scalar_type());
}

// The rest of the SwiGLU MLP: residual + down(silu(gate) * up) for gate_up [n, 2 hidden]. One row on
// CUDA is one kernel (activation, projection and add; float32 inside, rounded once); elsewhere
// LibTorch ops, which round the activation and the projection to the dtype on the way.
at::Tensor down_projection_add(const at::Tensor& residual, const at::Tensor& gate_up, const at::Tensor& w2,
                               int64_t hidden) {
#ifdef HIPSTUDIO_FUSED_LAYER_KERNELS
  if (gate_up.size(0) == 1) {
    at::Tensor y = row_gemv(gate_up, w2, /*silu_mul=*/true, &residual);
    if (y.defined()) return y;
  }
#endif
  const at::Tensor act = at::silu(gate_up.narrow(1, 0, hidden)) * gate_up.narrow(1, hidden, hidden);
  return residual + project(act, w2);
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

AttentionInputs attention_inputs(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                 const at::Tensor& rope_rows) {
  const int64_t n = x.size(0), qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
  at::Tensor h = rms_norm(x, layer.attn_norm, c.rms_norm_eps);
  at::Tensor qkv = project(h, layer.wqkv);  // [n, qd + 2 kvd]
  if (layer.bqkv.defined()) qkv = qkv + layer.bqkv;
  // q and k rotate as one tensor of n_heads + n_kv_heads heads.
  const at::Tensor qk = rotate_rows(qkv.narrow(1, 0, qd + kvd).view({n, c.n_heads + c.n_kv_heads, hd}).transpose(0, 1),
                                    rope_rows);
  AttentionInputs r;
  r.q = qk.narrow(0, 0, c.n_heads);
  r.k = qk.narrow(0, c.n_heads, c.n_kv_heads);
  r.v = qkv.narrow(1, qd + kvd, kvd).view({n, c.n_kv_heads, hd}).transpose(0, 1);
  return r;
}

at::Tensor attention_output_and_mlp(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                    const at::Tensor& attended) {
  const SumAndNorm y = add_rms_norm(x, project(attended, layer.wo), layer.mlp_norm, c.rms_norm_eps);
  const at::Tensor gate_up = project(y.normed, layer.w13);  // [n, 2 hidden]
  return down_projection_add(y.sum, gate_up, layer.w2, c.hidden_dim);
}

}  // namespace hipstudio
