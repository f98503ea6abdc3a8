#pragma once
// The Llama forward pass over a KV cache: prefill a chunk of tokens or decode one, step by step as
// in the paper's model (embeddings, per layer RMSNorm -> attention -> residual -> RMSNorm -> SwiGLU
// MLP -> residual, final RMSNorm, classifier).
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/model/attention_backend.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "engine/model/rope.h"

namespace hipstudio {

enum class LogitsFor { LastToken, AllTokens };

class Transformer {
 public:
  // `max_positions` bounds the positions this instance will see (the RoPE tables are built for it).
  Transformer(std::shared_ptr<const Model> model, int64_t max_positions);

  const Model& model() const { return *model_; }
  int64_t max_positions() const { return max_positions_; }

  // Runs `tokens` at positions [cache.length(), cache.length() + T), appends their keys/values to
  // the cache and returns float32 logits on the CPU: [1, vocab] or [T, vocab].
  at::Tensor forward(const std::vector<int32_t>& tokens, KVCache& cache, AttentionBackend& attention,
                     LogitsFor which = LogitsFor::LastToken) const;

 private:
  std::shared_ptr<const Model> model_;
  int64_t max_positions_;
  RopeTables rope_;
};

}  // namespace hipstudio
