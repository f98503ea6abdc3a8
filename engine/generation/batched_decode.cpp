#include "engine/generation/batched_decode.h"

#include <set>
#include <utility>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

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

}  // namespace

at::Tensor decode_batch(const Transformer& transformer, const std::vector<int32_t>& tokens,
                        const std::vector<BatchSequence>& sequences, const Transformer::LayerTimer& timer) {
  c10::InferenceMode inference;
  check_batch(transformer, tokens, sequences);
  const Model& model = transformer.model();
  const ModelConfig& c = model.config;
  const int64_t n = static_cast<int64_t>(tokens.size());

  // Row i sits at its own sequence's next position: its RoPE rows are gathered, not sliced.
  std::vector<int64_t> positions;
  for (const BatchSequence& s : sequences) positions.push_back(s.cache->length());
  const at::Tensor position_ids = at::tensor(at::IntArrayRef(positions), at::kLong).to(model.run.device);
  // [N, 2, head_dim] of each table the layers use (rope and rope_local may be one table).
  std::vector<std::pair<const void*, at::Tensor>> rope_rows;
  rope_rows.reserve(2);  // rows_of hands out references into it
  auto rows_of = [&](int64_t l) -> const at::Tensor& {
    const at::Tensor& table = transformer.rope_table(l);
    for (const auto& [key, rows] : rope_rows)
      if (key == table.data_ptr()) return rows;
    rope_rows.emplace_back(table.data_ptr(), table.index_select(0, position_ids));
    return rope_rows.back().second;
  };

  const bool cuda = model.run.device.is_cuda();
  DeviceTimer layer_time(cuda), attention_time(cuda);
  at::Tensor x = transformer.embed(tokens);  // [N, dim]
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (timer) layer_time.start();
    double attention_seconds = 0.0;
    const LayerWeights& layer = model.weights.layers[l];
    const RotatedQkv in = attention_inputs(c, layer, x, rows_of(l));  // q [n_heads, N, hd], k/v [kv_heads, N, hd]
    std::vector<at::Tensor> attended;
    attended.reserve(static_cast<size_t>(n));
    if (timer) attention_time.start();
    for (int64_t i = 0; i < n; ++i) {
      KVCache& cache = *sequences[static_cast<size_t>(i)].cache;
      const int64_t start = cache.length();
      cache.append(l, in.k.narrow(1, i, 1), in.v.narrow(1, i, 1));
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
    const at::Tensor by_row = at::cat(attended, 1).transpose(0, 1).reshape({n, c.q_dim()});  // [N, n_heads * hd]
    x = attention_output_and_mlp(c, layer, x, by_row);
    if (timer) timer(l, attention_seconds, layer_time.stop_seconds() - attention_seconds);
  }
  for (const BatchSequence& s : sequences) s.cache->advance(1);
  return transformer.logits_of(x).to(at::kCPU);
}

}  // namespace hipstudio
