#pragma once
// Per-layer key/value cache, preallocated for the whole run so decoding never reallocates.
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/formats/model_config.h"
#include "engine/runtime/device.h"

namespace hipstudio {

class KVCache {
 public:
  KVCache(const ModelConfig& config, const RunDevice& run, int64_t capacity);
  // A cache over given per-layer tensors ([n_kv_heads, capacity, head_dim] each, all one capacity):
  // a slot of a batch's storage (engine/generation/batch_kv_storage.h), written where they are.
  KVCache(std::vector<at::Tensor> keys, std::vector<at::Tensor> values);

  int64_t length() const { return length_; }      // tokens stored
  int64_t capacity() const { return capacity_; }

  // Stores k, v ([n_kv_heads, T, head_dim]) of `layer` at positions [length + offset, length +
  // offset + T) (offset: a block of rows within the tokens being added before advance()).
  void append(int64_t layer, const at::Tensor& k, const at::Tensor& v, int64_t offset = 0);
  // Views of the first `tokens` positions of a layer: [n_kv_heads, tokens, head_dim].
  at::Tensor keys(int64_t layer, int64_t tokens) const;
  at::Tensor values(int64_t layer, int64_t tokens) const;
  // Called once all layers have appended the same T tokens.
  void advance(int64_t tokens);
  void clear() { length_ = 0; }
  // Forgets every position from `tokens` on (tokens <= length()): the paired analysis re-runs its
  // decode steps from the end of the prompt.
  void truncate(int64_t tokens);

 private:
  std::vector<at::Tensor> k_;  // per layer [n_kv_heads, capacity, head_dim]
  std::vector<at::Tensor> v_;
  int64_t length_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace hipstudio
