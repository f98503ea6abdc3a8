#pragma once
// The pieces of a batched decode step that the eager step (batched_decode.cpp) and its CUDA graphs
// (batch_decode_graph.cpp) share, so that both compute the same numbers with the same kernels: where
// the sequences sit in one BatchKVStorage, the per-step int32 fields of a BatchAttentionCall in one
// array, the RoPE rows of the batch's positions, and a layer's cache write.
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/backends/attention_backend.h"
#include "engine/generation/batch_kv_storage.h"
#include "engine/generation/batched_decode.h"
#include "engine/model/layer_math.h"
#include "engine/model/transformer.h"

namespace hipstudio {

// Each sequence's slot in `storage`: (B) its cache's length (the step's position), its slot's first
// row and its capacity. Empty where some cache is not a slot of `storage`, the slots do not ascend
// in the batch's order, or the storage's rows exceed the kernels' int32 row numbers.
struct BatchSlots {
  std::vector<int64_t> positions, starts, capacities;
  bool empty() const { return positions.empty(); }
};
BatchSlots batch_slots(const std::vector<BatchSequence>& sequences, const BatchKVStorage* storage);

// BatchAttentionCall's int32 device fields of one step in one array (one copy to the device), B =
// slots.positions.size(): [0, B) key counts (positions + 1), [B, 2B) key starts, [2B, 3B + 1) query
// offsets 0..B, [3B + 1, 4B + 2) key offsets (the starts, then the last slot's end).
std::vector<int32_t> batch_call_ints(const BatchSlots& slots);
int64_t batch_call_ints_size(int64_t batch);
// The storage rows the step's new keys go to: starts[i] + positions[i].
std::vector<int64_t> batch_write_rows(const BatchSlots& slots);
// Points call's key_counts, key_starts, query_offsets and key_offsets at their parts of `ints`
// (batch_call_ints' layout, int32 on the device).
void set_batch_call_ints(BatchAttentionCall& call, const at::Tensor& ints, int64_t batch);

// The rows of each RoPE table the layers use at the batch's positions (int64 (B) on the run
// device): [B, 2, head_dim] gathered once per table (rope and rope_local may be one table).
class BatchRopeRows {
 public:
  BatchRopeRows(const Transformer& transformer, at::Tensor position_ids);
  const at::Tensor& of(int64_t layer);

 private:
  const Transformer& transformer_;
  at::Tensor ids_;
  std::vector<std::pair<const void*, at::Tensor>> rows_;  // (table's data, its rows), at most 2
};

// A batched step's new keys and values of layer l (attention_inputs' rows, every sequence a slot of
// `storage`) written at storage rows write_rows[i] (int64 (B) on the device), one copy each; returns
// the queries as BatchAttentionCall::q takes them, [B, n_heads, 1, head_dim] contiguous.
at::Tensor write_batch_kv(const RotatedQkv& in, BatchKVStorage& storage, int64_t l, const at::Tensor& write_rows);

}  // namespace hipstudio
