#include "engine/generation/batch_decode_graph.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/generation/batch_step_parts.h"
#include "engine/generation/decode_graph.h"
#include "engine/generation/graph_staging.h"
#include "engine/model/layer_math.h"

// CUDA graphs need a CUDA LibTorch's headers and library (the GPU machine's); elsewhere the class
// exists, says it is unsupported, and batched steps stay eager.
#if defined(HIPSTUDIO_TORCH_CUDA) && __has_include(<ATen/cuda/CUDAGraph.h>)
#define HIPSTUDIO_BATCH_DECODE_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace hipstudio {

#ifdef HIPSTUDIO_BATCH_DECODE_GRAPHS

struct BatchDecodeGraph::Impl {
  const Transformer& transformer;
  const Model& model;
  BatchKVStorage& storage;
  std::vector<const KVCache*> caches;     // (N) the sequences' caches, in batch order
  std::vector<AttentionBackend*> backends;  // (N) the sequences' backends; [0] is asked
  int64_t n = 0;
  BatchSlots slots;  // the slots' starts and capacities (fixed); positions: the last staged ones
  BatchGraphedAttention plan;

  // The staging's int64 words (graph_staging.h): [0, N) tokens, [N, 2N) positions, [2N, 3N) the
  // storage rows the new keys go to, [3N, 5N + 1) batch_call_ints' 4N + 2 int32 values, then the
  // backend's plan.step_values. Device views of them: tokens, positions, write_rows, call_ints,
  // step_values. Why one copy: every per-step input in the first graph's first node, no eager launch.
  std::unique_ptr<GraphStaging> staging;
  int64_t ints_at = 0, values_at = 0;
  at::Tensor tokens, positions, write_rows, call_ints, step_values;
  BatchAttentionCall call;  // the device fields (views of the staging), the slots' host fields

  // The graphs of decode_tail_chunks(0, layers), replayed in order: the first copies the staging and
  // embeds the tokens, the last ends with the logits (cached_out / refresh_out, float32 [N, vocab],
  // in the graphs' pool: a replay rewrites them in place). refresh: the same with each layer's mask
  // refreshes (call.refresh_in_graph), captured once a step that refreshes them all comes.
  using Graphs = std::vector<std::unique_ptr<at::cuda::CUDAGraph>>;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  Graphs cached, refresh;
  at::Tensor cached_out, refresh_out;
  GraphedStep last = GraphedStep::kNone;

  Impl(const Transformer& t, BatchKVStorage& s) : transformer(t), model(t.model()), storage(s) {}

  // The step's inputs at `positions` into the staging (the backend's values written apart).
  void stage(const std::vector<int32_t>& token_ids, const std::vector<int64_t>& at) {
    int64_t* host = staging->host();
    slots.positions = at;
    const std::vector<int64_t> rows = batch_write_rows(slots);
    for (int64_t i = 0; i < n; ++i) {
      const size_t s = static_cast<size_t>(i);
      host[i] = token_ids.empty() ? 0 : token_ids[s];
      host[n + i] = at[s];
      host[2 * n + i] = rows[s];
    }
    const std::vector<int32_t> ints = batch_call_ints(slots);
    std::memcpy(host + ints_at, ints.data(), ints.size() * sizeof(int32_t));
  }
  std::vector<int64_t> lengths() const {
    std::vector<int64_t> at;
    for (const KVCache* cache : caches) at.push_back(cache->length());
    return at;
  }

  // Layers [begin, end) of the step on x [N, dim] (the embeddings for 0), eagerly or under capture,
  // as decode_batch computes them (batch_step_parts.h) with the attention inside.
  at::Tensor run_layers(int64_t begin, int64_t end, bool refresh, at::Tensor x, cudaStream_t stream) {
    const ModelConfig& c = model.config;
    BatchRopeRows rope_rows(transformer, positions);  // each chunk gathers its own rows
    for (int64_t l = begin; l < end; ++l) {
      const LayerWeights& layer = model.weights.layers[static_cast<size_t>(l)];
      const RotatedQkv in = attention_inputs(c, layer, x, rope_rows.of(l));
      call.q = write_batch_kv(in, storage, l, write_rows);
      call.layer = l;
      call.math = layer_attention_math(c, l);
      call.k = storage.keys(l);
      call.v = storage.values(l);
      call.refresh_in_graph = refresh;
      const at::Tensor together = backends.front()->attend_batch_in_graph(call, backends, stream);  // [N, n_heads, hd]
      x = attention_output_and_mlp(c, layer, x, together.reshape({n, c.q_dim()}));
    }
    return x;
  }
  // The work of chunk `i`: the staging's copy and the embedding first, the logits last.
  at::Tensor run_chunk(size_t i, bool refresh, at::Tensor x, cudaStream_t stream) {
    if (i == 0) {
      staging->copy(stream);
      x = embed_tokens(model, tokens);
    }
    x = run_layers(chunks[i].first, chunks[i].second, refresh, x, stream);
    return i + 1 == chunks.size() ? transformer.logits_of(x) : x;
  }

  // The refresh steps' capture, once a step that refreshes every sequence's graphed layers comes
  // (the constructor asks too, so that the first step after the prefills finds it made).
  void capture_refresh_when_due() {
    if (!plan.refreshes || !refresh.empty()) return;
    for (const AttentionBackend* b : backends)
      if (!b->next_step_refreshes_graphed_layers()) return;
    refresh = capture(/*refresh=*/true, &refresh_out);
  }

  // One eager pass on a side stream (the launches' one-time set-up, the backend's workspaces), then
  // the captures of the chunks in order into one pool of their own (the two captures are
  // alternatives, each replayed in capture order), then one replay (each graph's first launch
  // uploads it), all at the caches' lengths with the plan's capture values.
  Graphs capture(bool refresh, at::Tensor* out) {
    staging->wait_until_read();
    for (int64_t i = 0; i < plan.step_values; ++i)
      staging->host()[values_at + i] = plan.capture_values.at(static_cast<size_t>(i));
    stage({}, lengths());
    c10::cuda::device_synchronize();
    Graphs graphs;
    {
      const c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool());
      const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
      at::Tensor x;
      for (size_t i = 0; i < chunks.size(); ++i) x = run_chunk(i, refresh, x, stream);
      c10::cuda::device_synchronize();
      const auto pool = at::cuda::graph_pool_handle();
      for (size_t i = 0; i < chunks.size(); ++i) {
        graphs.push_back(std::make_unique<at::cuda::CUDAGraph>());
        graphs.back()->capture_begin(pool);
        // The next chunk reads x where this one leaves it (held here meanwhile, so no later capture
        // into the pool reuses its memory).
        x = run_chunk(i, refresh, x, stream);
        graphs.back()->capture_end();
      }
      *out = x;
      for (auto& graph : graphs) graph->replay();  // the uploads, outside any timed step
    }
    c10::cuda::device_synchronize();
    return graphs;
  }
};

bool BatchDecodeGraph::supported() { return true; }

BatchDecodeGraph::BatchDecodeGraph(const Transformer& transformer, BatchKVStorage& storage,
                                   const std::vector<BatchSequence>& sequences)
    : impl_(std::make_unique<Impl>(transformer, storage)) {
  c10::InferenceMode inference;
  Impl& g = *impl_;
  const Model& model = transformer.model();
  const ModelConfig& c = model.config;
  g.n = static_cast<int64_t>(sequences.size());
  for (const BatchSequence& s : sequences) {
    g.caches.push_back(s.cache);
    g.backends.push_back(s.attention);
  }
  g.slots = batch_slots(sequences, &storage);
  if (g.n == 0 || g.slots.empty() || !model.run.device.is_cuda() || !plain_attention_math(c)) return;
  for (const BatchSequence& s : sequences)
    if (!s.attention || s.cache->length() + 1 > std::min(s.cache->capacity(), transformer.max_positions())) return;
  for (const AttentionBackend* b : g.backends)
    if (!b) return;

  // The backend decides from the call's form (its device fields set, its host positions the
  // caches' lengths); the staging, sized by its plan, then takes the device fields' place.
  const int64_t n = g.n;
  const auto options = at::TensorOptions().device(model.run.device).dtype(model.run.dtype);
  BatchAttentionCall& call = g.call;
  call.positions = g.slots.positions;
  call.starts = g.slots.starts;
  call.capacities = g.slots.capacities;
  call.layer = 0;
  call.math = layer_attention_math(c, 0);
  call.q = at::zeros({n, c.n_heads, 1, c.head_dim}, options);
  call.k = storage.keys(0);
  call.v = storage.values(0);
  const std::vector<int32_t> ints = batch_call_ints(g.slots);
  set_batch_call_ints(call, at::tensor(at::ArrayRef<int32_t>(ints), at::kInt).to(model.run.device), n);
  call.device_positions = at::tensor(at::IntArrayRef(g.slots.positions), at::kLong).to(model.run.device);
  g.plan = g.backends.front()->prepare_graphed_batch(call, g.backends);
  if (!g.plan.graphed) return;

  const int64_t ints_words = (batch_call_ints_size(n) + 1) / 2;
  g.ints_at = 3 * n;
  g.values_at = g.ints_at + ints_words;
  g.staging = std::make_unique<GraphStaging>(g.values_at + g.plan.step_values, model.run.device);
  const at::Tensor& words = g.staging->device();
  g.tokens = words.narrow(0, 0, n);
  g.positions = words.narrow(0, n, n);
  g.write_rows = words.narrow(0, 2 * n, n);
  g.call_ints = words.narrow(0, g.ints_at, ints_words).view(at::kInt).narrow(0, 0, batch_call_ints_size(n));
  g.step_values = words.narrow(0, g.values_at, g.plan.step_values);
  set_batch_call_ints(call, g.call_ints, n);
  call.device_positions = g.positions;
  call.step_values = g.step_values;
  g.chunks = decode_tail_chunks(0, c.n_layers);
  g.cached = g.capture(/*refresh=*/false, &g.cached_out);
  g.capture_refresh_when_due();
}

bool BatchDecodeGraph::graphed() const { return !impl_->cached.empty(); }

bool BatchDecodeGraph::serves(const BatchKVStorage& storage, const std::vector<BatchSequence>& sequences) const {
  const Impl& g = *impl_;
  if (&storage != &g.storage || static_cast<int64_t>(sequences.size()) != g.n) return false;
  for (size_t i = 0; i < sequences.size(); ++i)
    if (sequences[i].cache != g.caches[i] || sequences[i].attention != g.backends[i]) return false;
  return true;
}

GraphedStep BatchDecodeGraph::last_step() const { return impl_->last; }

at::Tensor BatchDecodeGraph::step(const std::vector<int32_t>& tokens, const std::vector<BatchSequence>& sequences) {
  c10::InferenceMode inference;
  Impl& g = *impl_;
  g.last = GraphedStep::kNone;
  if (!graphed() || !serves(g.storage, sequences) || static_cast<int64_t>(tokens.size()) != g.n) return {};
  const std::vector<int64_t> at = g.lengths();
  for (int64_t i = 0; i < g.n; ++i) {
    const KVCache& cache = *g.caches[static_cast<size_t>(i)];
    if (at[static_cast<size_t>(i)] + 1 > std::min(cache.capacity(), g.transformer.max_positions())) return {};
  }
  g.capture_refresh_when_due();
  g.staging->wait_until_read();
  const GraphedStep kind = g.backends.front()->begin_graphed_batch_step(
      at, g.plan, /*refresh_captured=*/!g.refresh.empty(), g.backends, g.staging->host() + g.values_at);
  if (kind == GraphedStep::kNone || (kind == GraphedStep::kRefresh && g.refresh.empty())) return {};
  g.stage(tokens, at);
  Impl::Graphs& graphs = kind == GraphedStep::kRefresh ? g.refresh : g.cached;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  for (size_t i = 0; i < graphs.size(); ++i) {
    graphs[i]->replay();
    if (i == 0) g.staging->mark_read(stream);
  }
  for (const BatchSequence& s : sequences) s.cache->advance(1);
  g.last = kind;
  return (kind == GraphedStep::kRefresh ? g.refresh_out : g.cached_out).to(at::kCPU);
}

#else  // no CUDA LibTorch: batched steps stay eager

struct BatchDecodeGraph::Impl {};
bool BatchDecodeGraph::supported() { return false; }
BatchDecodeGraph::BatchDecodeGraph(const Transformer&, BatchKVStorage&, const std::vector<BatchSequence>&) {
  throw std::logic_error("CUDA graphs need an engine built against a CUDA LibTorch");
}
bool BatchDecodeGraph::graphed() const { return false; }
bool BatchDecodeGraph::serves(const BatchKVStorage&, const std::vector<BatchSequence>&) const { return false; }
GraphedStep BatchDecodeGraph::last_step() const { return GraphedStep::kNone; }
at::Tensor BatchDecodeGraph::step(const std::vector<int32_t>&, const std::vector<BatchSequence>&) { return {}; }

#endif

BatchDecodeGraph::~BatchDecodeGraph() = default;

}  // namespace hipstudio
