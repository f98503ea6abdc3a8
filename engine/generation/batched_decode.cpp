#include "engine/generation/batched_decode.h"

#include <set>
#include <utility>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/generation/batch_step_parts.h"
#include "engine/model/layer_math.h"
#include "engine/runtime/device_timer.h"

namespace hipstudio {

namespace {

// Refuses what would silently compute garbage: mismatched lists, a cache given twice (its one new
// position would be written by two tokens), a cache with no room left.
void check_batch(const Transformer& transformer, const std::vector<int32_t>& tokens,
                 const std::vector<BatchSequence>& sequences) {
  if (tokens.empty()) throw std::invalid_argument("decode_batch needs at least one sequence");
  if (tokens.size() != sequences.size())
    throw std::invalid_argument("decode_batch: " + std::to_string(tokens.size()) + " tokens for " +
                                std::to_string(sequences.size()) + " sequences");
  std::set<const KVCache*> seen;
  for (const BatchSequence& s : sequences) {
    if (!s.cache || !s.attention) throw std::invalid_argument("decode_batch: a sequence without a cache or a backend");
    if (!seen.insert(s.cache).second) throw std::invalid_argument("decode_batch: the same cache twice in one batch");
    const int64_t end = s.cache->length() + 1;
    if (end > transformer.max_positions() || end > s.cache->capacity())
      throw std::logic_error("decode_batch past the prepared context: " + std::to_string(end) + " positions");
  }
}

// The batch's per-step attention arguments where every cache is a slot of `storage` in ascending
// slot order (BatchAttentionCall's fields but the layer's), with the rows the new keys go to
// (int64 on the device); nothing (empty positions) otherwise.
struct OneCall {
  BatchAttentionCall call;
  at::Tensor write_rows;
};
OneCall one_call_of(const std::vector<BatchSequence>& sequences, const BatchKVStorage* storage, const c10::Device& device) {
  OneCall one;
  BatchSlots slots = batch_slots(sequences, storage);
  if (slots.empty()) return one;
  const int64_t n = static_cast<int64_t>(sequences.size());
  const std::vector<int32_t> packed = batch_call_ints(slots);
  set_batch_call_ints(one.call, at::tensor(at::ArrayRef<int32_t>(packed), at::kInt).to(device), n);
  one.write_rows = at::tensor(at::IntArrayRef(batch_write_rows(slots)), at::kLong).to(device);
  BatchAttentionCall& c = one.call;
  c.positions = std::move(slots.positions);
  c.starts = std::move(slots.starts);
  c.capacities = std::move(slots.capacities);
  return one;
}

}  // namespace

at::Tensor decode_batch(const Transformer& transformer, const std::vector<int32_t>& tokens,
                        const std::vector<BatchSequence>& sequences, const Transformer::LayerTimer& timer,
                        BatchKVStorage* storage, int64_t* layers_in_one_call) {
  c10::InferenceMode inference;
  check_batch(transformer, tokens, sequences);
  const Model& model = transformer.model();
  const ModelConfig& c = model.config;
  const int64_t n = static_cast<int64_t>(tokens.size());

  // Row i sits at its own sequence's next position: its RoPE rows are gathered, not sliced.
  std::vector<int64_t> positions;
  for (const BatchSequence& s : sequences) positions.push_back(s.cache->length());
  const at::Tensor position_ids = at::tensor(at::IntArrayRef(positions), at::kLong).to(model.run.device);
  BatchRopeRows rope_rows(transformer, position_ids);  // [N, 2, head_dim] of each table the layers use

  const bool cuda = model.run.device.is_cuda();
  OneCall one = one_call_of(sequences, storage, model.run.device);
  const bool slots = !one.call.positions.empty();
  std::vector<AttentionBackend*> backends;
  for (const BatchSequence& s : sequences) backends.push_back(s.attention);
  if (layers_in_one_call) *layers_in_one_call = 0;
  DeviceTimer layer_time(cuda), attention_time(cuda);
  at::Tensor x = transformer.embed(tokens);  // [N, dim]
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (timer) layer_time.start();
    double attention_seconds = 0.0;
    const LayerWeights& layer = model.weights.layers[l];
    const RotatedQkv in = attention_inputs(c, layer, x, rope_rows.of(l));  // q [n_heads, N, hd], k/v [kv_heads, N, hd]
    std::vector<at::Tensor> attended;
    attended.reserve(static_cast<size_t>(n));
    if (timer) attention_time.start();
    at::Tensor together;  // [N, n_heads, hd] where one call attended every sequence
    if (slots) {
      // Row i's key and value into its slot at its position, every row in one copy each.
      const at::Tensor queries = write_batch_kv(in, *storage, l, one.write_rows);
      BatchAttentionCall& call = one.call;
      call.layer = l;
      call.math = layer_attention_math(c, l);
      call.q = queries;  // [N, n_heads, 1, hd]
      call.k = storage->keys(l);
      call.v = storage->values(l);
      together = backends.front()->attend_batch(call, backends);
      if (together.defined() && layers_in_one_call) ++*layers_in_one_call;
    }
    for (int64_t i = 0; i < n && !together.defined(); ++i) {
      KVCache& cache = *sequences[static_cast<size_t>(i)].cache;
      const int64_t start = cache.length();
      if (!slots) cache.append(l, in.k.narrow(1, i, 1), in.v.narrow(1, i, 1));
      AttentionCall call;
      call.layer = l;
      call.math = layer_attention_math(c, l);
      call.q = in.q.narrow(1, i, 1).contiguous();  // [n_heads, 1, hd], as a batch-1 step hands it
      call.k = cache.keys(l, start + 1);
      call.v = cache.values(l, start + 1);
      call.first_position = start;
      call.decoding = true;
      attended.push_back(sequences[static_cast<size_t>(i)].attention->attend(call));  // [n_heads, 1, hd]
    }
    // The cache writes sit inside this interval too: one row each, a small part beside attention.
    if (timer) attention_seconds = attention_time.stop_seconds();
    const at::Tensor by_row = together.defined() ? together.reshape({n, c.q_dim()})
                                                 : at::cat(attended, 1).transpose(0, 1).reshape({n, c.q_dim()});  // [N, n_heads * hd]
    x = attention_output_and_mlp(c, layer, x, by_row);
    if (timer) timer(l, attention_seconds, layer_time.stop_seconds() - attention_seconds);
  }
  for (const BatchSequence& s : sequences) s.cache->advance(1);
  return transformer.logits_of(x).to(at::kCPU);
}

}  // namespace hipstudio
