#pragma once
// The per-layer attention interface: the forward pass hands each layer's post-RoPE queries and
// the layer's KV cache (already holding the new tokens) to a backend, which returns the attention
// output. Dense attention is one backend; HiP plugs in as another without touching the model.
#include <string>

#include <ATen/core/Tensor.h>

namespace hipstudio {

struct AttentionCall {
  int64_t layer = 0;
  at::Tensor q;                // [n_heads, T, head_dim], post-RoPE
  at::Tensor k;                // [n_kv_heads, first_position + T, head_dim], post-RoPE, whole cache so far
  at::Tensor v;                // [n_kv_heads, first_position + T, head_dim]
  int64_t first_position = 0;  // position of q's first row; row i attends to keys [0, first_position + i]
  bool decoding = false;       // a decode step (one new token) rather than (a chunk of) the prompt
  // Optional: a contiguous [n_heads, T, head_dim] tensor of q's dtype a backend may write the result
  // into (and return), sparing the caller a copy; a backend that cannot returns a new tensor.
  at::Tensor out;
};

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  virtual std::string name() const = 0;
  // Returns [n_heads, T, head_dim] in q's dtype.
  virtual at::Tensor attend(const AttentionCall& call) = 0;
  // Prefill chunks are multiples of this many tokens (HiP: b_q, so a chunk boundary never splits a
  // query block and chunked prefill computes the same masks as one pass).
  virtual int64_t chunk_multiple() const { return 1; }
};

// Causal softmax(q k^T / sqrt(d)) v with grouped-query heads; softmax in float32.
class DenseAttention final : public AttentionBackend {
 public:
  std::string name() const override { return "dense"; }
  at::Tensor attend(const AttentionCall& call) override;
  // How attend computes on `device`: LibTorch's fused kernel (CUDA with LibTorch 2; no score
  // matrix), or explicit scores in score_type (float64 for float32 on the CPU, else float32). The
  // memory estimate asks these instead of repeating the rule.
  static bool fused_on(const c10::Device& device);
  static at::ScalarType score_type(const c10::Device& device, at::ScalarType dtype);
};

}  // namespace hipstudio
