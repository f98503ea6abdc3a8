#pragma once
// The math of one decoder layer around its attention call, written once for the eager forward pass
// (transformer.cpp), the batched decode step and the CUDA-graph decode step (decode_graph.cpp), so
// they compute the same numbers with the same kernels. Every architecture's switches
// (ModelConfig: biases, q/k norms, sandwich norms, the activation, the embedding scale, windows,
// attention scale and soft-caps) are read here and nowhere else; the fused CUDA kernels run only
// where they compute the architecture's maths, the LibTorch form everywhere else.
#include <ATen/core/Tensor.h>

#include "engine/formats/model_config.h"
#include "engine/backends/attention_backend.h"
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

// The attention maths of `layer` (its window, scale, soft-cap and rank among the full-attention
// layers), what the forward pass puts in each AttentionCall.
AttentionMath layer_attention_math(const ModelConfig& c, int64_t layer);
// Whether every layer's attention is plain (AttentionMath::plain): the decode graphs' captured
// attention (flash, HiP's kernels) takes only that.
bool plain_attention_math(const ModelConfig& c);

// The embeddings of token ids (int64 [T] on the run device) [T, dim], times the architecture's
// embedding scale rounded to the run dtype, as transformers multiplies (Gemma: sqrt(dim)).
at::Tensor embed_tokens(const Model& model, const at::Tensor& ids);

// cap * tanh(logits / cap) (the final-logit soft-cap, Gemma 2); the logits unchanged for cap 0.
at::Tensor soft_cap_logits(const at::Tensor& logits, double cap);

// Each q and k head of qkv rows [n, q_dim + 2 kv_dim] through RMSNorm over head_dim with the
// layer's q_norm / k_norm (Qwen3, Gemma 3: before RoPE); v unchanged.
at::Tensor head_norms(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& qkv);

// The attention output projection's rows `out` [n, dim] as they join the residual: + bo, then
// post_attn_norm (sandwich norms), where the architecture has them.
at::Tensor attention_residual(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& out);

// One layer's attention inputs as tensors after RoPE (the kernels' hip::AttentionInputs is the float32
// host view of the same data).
struct RotatedQkv {
  at::Tensor q;  // [n_heads, n, head_dim], rotated
  at::Tensor k;  // [n_kv_heads, n, head_dim], rotated
  at::Tensor v;  // [n_kv_heads, n, head_dim]
};

// Residual rows x [n, dim] -> RMSNorm, the fused q/k/v projection (+ bias), the q/k head norms,
// RoPE (q and k rotated together) with the rows' RoPE table rows [n, 2, head_dim] (rope.h; the
// layer's table: rope or rope_local). The composition of the two steps below.
RotatedQkv attention_inputs(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                 const at::Tensor& rope_rows);
// RMSNorm, the fused q/k/v projection (+ bias) and the q/k head norms (qk_norm): [n, dim] ->
// [n, q_dim + 2 kv_dim], ready for RoPE.
at::Tensor attention_qkv(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x);
// Splits qkv rows into heads and rotates q and k with the rows' RoPE table rows [n, 2, head_dim].
RotatedQkv rotate_qkv(const ModelConfig& c, const at::Tensor& qkv, const at::Tensor& rope_rows);

// The decode step's RoPE and cache write for one token: qkv [1, q_dim + 2 kv_dim], its position a
// device tensor [1] (int64; a CUDA graph replays it), table RopeTables::table; rotates q and k,
// writes k and v into the layer's cache keys / values [n_kv_heads, capacity, head_dim] at the
// position, and returns q [n_heads, 1, head_dim]. On CUDA one kernel (kernels/cuda/rope_cache.h),
// elsewhere rotate_qkv and two index copies; the same arithmetic.
at::Tensor rotate_and_cache_row(const ModelConfig& c, const at::Tensor& qkv, const at::Tensor& table,
                                const at::Tensor& position, const at::Tensor& keys, const at::Tensor& values);

// The decode step's attention inputs for one token: rotate_and_cache_row(attention_qkv(x)). On CUDA
// (bf16/f16, no q/k/v bias, no q/k norms) one kernel: the RoPE and cache write run in the projection's epilogue
// (kernels/cuda/row_gemv.h, rope), the same arithmetic and roundings. The same bits where the
// projection alone takes the pair layout too (q/k/v rows between dim and 2 dim, as an 8B Llama's);
// elsewhere the fused norm's sum of squares is added in another order above 2048 bf16 inputs a row
// (more 16-byte chunks than threads), now and then one unit in the last place apart.
at::Tensor rotated_qkv_cached_row(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                  const at::Tensor& table, const at::Tensor& position, const at::Tensor& keys,
                                  const at::Tensor& values);

// The layer's rest: x + attention_residual(wo(attended)), then h = mlp_norm(x) and
// + [post_mlp_norm](down(act(gate(h)) * up(h))), with the architecture's biases and activation
// (SiLU or GELU-tanh). attended: [n, n_heads * head_dim]. Returns the new residual rows [n, dim].
// One row of a plain SwiGLU layer on CUDA: the activation, down projection and residual add are one
// kernel, summed in float32 and rounded once (LibTorch's ops round the activation and the
// projection to the dtype first: within bf16 rounding).
at::Tensor attention_output_and_mlp(const ModelConfig& c, const LayerWeights& layer, const at::Tensor& x,
                                    const at::Tensor& attended);

}  // namespace hipstudio
