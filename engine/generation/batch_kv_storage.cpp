#include "engine/generation/batch_kv_storage.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace hipstudio {

BatchKVStorage::BatchKVStorage(const ModelConfig& c, const RunDevice& run, const std::vector<int64_t>& capacities) {
  if (capacities.empty()) throw std::invalid_argument("a batch's KV storage needs at least one slot");
  for (const int64_t capacity : capacities) {
    if (capacity < 1) throw std::invalid_argument("a KV slot of " + std::to_string(capacity) + " positions");
    starts_.push_back(rows_);
    rows_ += capacity;
  }
  const auto options = at::TensorOptions().device(run.device).dtype(run.dtype);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    k_.push_back(at::empty({c.n_kv_heads, rows_, c.head_dim}, options));
    v_.push_back(at::empty({c.n_kv_heads, rows_, c.head_dim}, options));
  }
  for (size_t i = 0; i < capacities.size(); ++i) {
    std::vector<at::Tensor> k, v;
    for (int64_t l = 0; l < c.n_layers; ++l) {
      k.push_back(k_[static_cast<size_t>(l)].narrow(1, starts_[i], capacities[i]));
      v.push_back(v_[static_cast<size_t>(l)].narrow(1, starts_[i], capacities[i]));
    }
    caches_.push_back(std::make_unique<KVCache>(std::move(k), std::move(v)));
  }
}

int64_t BatchKVStorage::slot_of(const KVCache& cache) const {
  for (size_t i = 0; i < caches_.size(); ++i)
    if (caches_[i].get() == &cache) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace hipstudio
