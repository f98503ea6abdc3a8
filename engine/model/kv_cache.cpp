#include "engine/model/kv_cache.h"

#include <stdexcept>
#include <utility>

#include <ATen/ATen.h>

namespace hipstudio {

KVCache::KVCache(const ModelConfig& c, const RunDevice& run, int64_t capacity) : capacity_(capacity) {
  auto options = at::TensorOptions().device(run.device).dtype(run.dtype);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    k_.push_back(at::empty({c.n_kv_heads, capacity, c.head_dim}, options));
    v_.push_back(at::empty({c.n_kv_heads, capacity, c.head_dim}, options));
  }
}

KVCache::KVCache(std::vector<at::Tensor> keys, std::vector<at::Tensor> values) : k_(std::move(keys)), v_(std::move(values)) {
  if (k_.empty() || k_.size() != v_.size()) throw std::logic_error("KV cache over views: one key and one value tensor a layer");
  capacity_ = k_.front().size(1);
  for (size_t l = 0; l < k_.size(); ++l)
    if (k_[l].dim() != 3 || k_[l].size(1) != capacity_ || !k_[l].sizes().equals(v_[l].sizes()))
      throw std::logic_error("KV cache over views: every layer's keys and values [n_kv_heads, capacity, head_dim]");
}

void KVCache::append(int64_t layer, const at::Tensor& k, const at::Tensor& v, int64_t offset) {
  const int64_t T = k.size(1), at = length_ + offset;
  if (offset < 0 || at + T > capacity_)
    throw std::logic_error("KV cache overflow: the caller sized the cache for " + std::to_string(capacity_) + " tokens");
  k_[layer].narrow(1, at, T).copy_(k);
  v_[layer].narrow(1, at, T).copy_(v);
}

at::Tensor KVCache::keys(int64_t layer, int64_t tokens) const { return k_[layer].narrow(1, 0, tokens); }
at::Tensor KVCache::values(int64_t layer, int64_t tokens) const { return v_[layer].narrow(1, 0, tokens); }

void KVCache::advance(int64_t tokens) { length_ += tokens; }

void KVCache::truncate(int64_t tokens) {
  if (tokens < 0 || tokens > length_)
    throw std::logic_error("KV cache truncate to " + std::to_string(tokens) + " of " + std::to_string(length_) + " tokens");
  length_ = tokens;
}

}  // namespace hipstudio
