#pragma once
// The math of one Llama layer around its attention call, written once for the eager forward pass
// (transformer.cpp) and the CUDA-graph decode step (decode_graph.cpp), so both compute the same
// numbers with the same kernels.
#include <ATen/core/Tensor.h>

#include "engine/formats/model_config.h"
#include "engine/model/model.h"

namespace hipstudio {

// x: [n, in], w: [out, in] -> [n, out]. One row goes through a matrix-vector product: on the CPU,
// gemv streams the weights once and is ~2.7x faster than a one-row gemm in LibTorch 1.13; on CUDA
// (bf16/f16) the project's kernel (kernels/cuda/row_gemv.h), which reads the weights faster than
// cuBLAS's gemv, summing in float32 and rounding once.
at::Tensor project(const at::Tensor& x, const at::Tensor& w);

// RMSNorm in float32 (weight is float32), result in x's dtype. On CUDA one fused kernel
// (kernels/cuda/row_norm.h), elsewhere LibTorch ops; the same arithmetic.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// Whether this build has the fused CUDA RMSNorm and the matrix-vector kernel of project() (a CUDA
// LibTorch and the project's CUDA kernels).
bool fused_rms_norm_built();

struct SumAndNorm {
  at::Tensor sum;     // x + residual, in x's dtype
  at::Tensor normed;  // rms_norm(sum)
};
// The residual add and the RMSNorm after it (one kernel on CUDA).
SumAndNorm add_rms_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, double eps);

struct AttentionInputs {
  at::Tensor q;  // [n_heads, n, head_dim], rotated
  at::Tensor k;  // [n_kv_heads, n, head_dim], rotated
  at::Tensor v;  // [n_kv_heads, n, head_dim]
};

// Residual rows x [n, dim] -> RMSNorm, the fused q/k/v projection (+ bias), RoPE (q and k rotated
// together) with the rows' RoPE table rows [n, 2, head_dim] (rope.h). The composition of the two
// steps below.
AttentionInputs attention_inputs(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                 const at::Tensor& rope_rows);
// RMSNorm and the fused q/k/v projection (+ bias): [n, dim] -> [n, q_dim + 2 kv_dim].
at::Tensor attention_qkv(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x);
// Splits qkv rows into heads and rotates q and k with the rows' RoPE table rows [n, 2, head_dim].
AttentionInputs rotate_qkv(const ModelConfig& c, const at::Tensor& qkv, const at::Tensor& rope_rows);

// The decode step's RoPE and cache write for one token: qkv [1, q_dim + 2 kv_dim], its position a
// device tensor [1] (int64; a CUDA graph replays it), table RopeTables::table; rotates q and k,
// writes k and v into the layer's cache keys / values [n_kv_heads, capacity, head_dim] at the
// position, and returns q [n_heads, 1, head_dim]. On CUDA one kernel (kernels/cuda/rope_cache.h),
// elsewhere rotate_qkv and two index copies; the same arithmetic.
at::Tensor rotate_and_cache_row(const ModelConfig& c, const at::Tensor& qkv, const at::Tensor& table,
                                const at::Tensor& position, const at::Tensor& keys, const at::Tensor& values);

// The decode step's attention inputs for one token: rotate_and_cache_row(attention_qkv(x)). On CUDA
// (bf16/f16, no q/k/v bias) one kernel: the RoPE and cache write run in the projection's epilogue
// (kernels/cuda/row_gemv.h, rope), the same arithmetic and roundings. The same bits where the
// projection alone takes the pair layout too (q/k/v rows between dim and 2 dim, as an 8B Llama's);
// elsewhere the fused norm's sum of squares is added in another order above 2048 bf16 inputs a row
// (more 16-byte chunks than threads), now and then one unit in the last place apart.
at::Tensor rotated_qkv_cached_row(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                  const at::Tensor& table, const at::Tensor& position, const at::Tensor& keys,
                                  const at::Tensor& values);

// The layer's rest: x + wo(attended), then + the SwiGLU MLP, down(silu(gate(h)) * up(h)).
// attended: [n, n_heads * head_dim]. Returns the new residual rows [n, dim]. One row on CUDA: the
// activation, down projection and residual add are one kernel, summed in float32 and rounded once
// (LibTorch's ops round the activation and the projection to the dtype first: within bf16 rounding).
at::Tensor attention_output_and_mlp(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                    const at::Tensor& attended);

}  // namespace hipstudio
