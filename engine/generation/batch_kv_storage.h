#pragma once
// The KV caches of a decode batch side by side in one tensor per layer, so that one attention
// launch covers every sequence: layer l's keys (and values) are [n_kv_heads, rows, head_dim], and
// sequence slot i owns the rows [start(i), start(i) + capacity(i)) of it. Each slot is an ordinary
// KVCache over views of its rows (prefill and batch-1 steps use it as any cache); a batched step
// hands the whole tensors and the slots' starts to the backend (BatchAttentionCall), which attends
// every sequence at once: flash's variable-length form with the starts as its key offsets (dense),
// the HiP kernels with per-sequence key starts and counts. Slots may differ in capacity: a batch of
// 4 x 128k and 4 x 8k sequences holds 4 x 128k + 4 x 8k rows, not 8 x 128k.
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/formats/model_config.h"
#include "engine/model/kv_cache.h"
#include "engine/runtime/device.h"

namespace hipstudio {

class BatchKVStorage {
 public:
  // One slot per entry of `capacities` (each >= 1), in that order.
  BatchKVStorage(const ModelConfig& config, const RunDevice& run, const std::vector<int64_t>& capacities);
  BatchKVStorage(const BatchKVStorage&) = delete;
  BatchKVStorage& operator=(const BatchKVStorage&) = delete;

  int64_t slots() const { return static_cast<int64_t>(caches_.size()); }
  KVCache& slot(int64_t i) { return *caches_.at(static_cast<size_t>(i)); }
  const KVCache& slot(int64_t i) const { return *caches_.at(static_cast<size_t>(i)); }
  // The slot whose cache `cache` is (its tensors, not a copy), or -1.
  int64_t slot_of(const KVCache& cache) const;
  int64_t start(int64_t i) const { return starts_.at(static_cast<size_t>(i)); }
  int64_t rows() const { return rows_; }  // every slot's capacity together
  // Layer l's whole tensors, [n_kv_heads, rows(), head_dim].
  const at::Tensor& keys(int64_t layer) const { return k_.at(static_cast<size_t>(layer)); }
  const at::Tensor& values(int64_t layer) const { return v_.at(static_cast<size_t>(layer)); }

 private:
  std::vector<at::Tensor> k_, v_;
  std::vector<int64_t> starts_;
  int64_t rows_ = 0;
  std::vector<std::unique_ptr<KVCache>> caches_;
};

}  // namespace hipstudio
