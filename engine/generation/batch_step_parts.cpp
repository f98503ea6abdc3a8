#include "engine/generation/batch_step_parts.h"

#include <ATen/ATen.h>


namespace hipstudio {

BatchSlots batch_slots(const std::vector<BatchSequence>& sequences, const BatchKVStorage* storage) {
  BatchSlots slots;
  if (!storage || storage->rows() >= (int64_t{1} << 31)) return slots;  // the kernels' int32 rows
  int64_t previous = -1;
  for (const BatchSequence& s : sequences) {
    const int64_t slot = storage->slot_of(*s.cache);
    if (slot <= previous) return {};
    previous = slot;
    slots.positions.push_back(s.cache->length());
    slots.starts.push_back(storage->start(slot));
    slots.capacities.push_back(s.cache->capacity());
  }
  return slots;
}

int64_t batch_call_ints_size(int64_t batch) { return 4 * batch + 2; }

std::vector<int64_t> batch_write_rows(const BatchSlots& slots) {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < slots.positions.size(); ++i) rows.push_back(slots.starts[i] + slots.positions[i]);
  return rows;
}

std::vector<int32_t> batch_call_ints(const BatchSlots& slots) {
  const int64_t n = static_cast<int64_t>(slots.positions.size());
  std::vector<int32_t> packed;
  packed.reserve(static_cast<size_t>(batch_call_ints_size(n)));
  for (const int64_t p : slots.positions) packed.push_back(static_cast<int32_t>(p + 1));
  for (const int64_t s : slots.starts) packed.push_back(static_cast<int32_t>(s));
  for (int64_t i = 0; i <= n; ++i) packed.push_back(static_cast<int32_t>(i));
  for (const int64_t s : slots.starts) packed.push_back(static_cast<int32_t>(s));
  packed.push_back(static_cast<int32_t>(slots.starts.back() + slots.capacities.back()));
  return packed;
}

void set_batch_call_ints(BatchAttentionCall& call, const at::Tensor& ints, int64_t n) {
  call.key_counts = ints.narrow(0, 0, n);
  call.key_starts = ints.narrow(0, n, n);
  call.query_offsets = ints.narrow(0, 2 * n, n + 1);
  call.key_offsets = ints.narrow(0, 3 * n + 1, n + 1);
}

BatchRopeRows::BatchRopeRows(const Transformer& transformer, at::Tensor position_ids)
    : transformer_(transformer), ids_(std::move(position_ids)) {
  rows_.reserve(2);  // of() hands out references into it
}

const at::Tensor& BatchRopeRows::of(int64_t layer) {
  const at::Tensor& table = transformer_.rope_table(layer);
  for (const auto& [key, rows] : rows_)
    if (key == table.data_ptr()) return rows;
  rows_.emplace_back(table.data_ptr(), table.index_select(0, ids_));
  return rows_.back().second;
}

at::Tensor write_batch_kv(const RotatedQkv& in, BatchKVStorage& storage, int64_t l, const at::Tensor& write_rows) {
  storage.keys(l).index_copy_(1, write_rows, in.k);
  storage.values(l).index_copy_(1, write_rows, in.v);
  return in.q.transpose(0, 1).contiguous().unsqueeze(2);
}

}  // namespace hipstudio
