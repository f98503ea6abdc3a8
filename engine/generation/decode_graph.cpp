#include "engine/generation/decode_graph.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <ATen/ATen.h>

#include "engine/generation/graph_staging.h"
#include "engine/model/layer_math.h"

// CUDA graphs need a CUDA LibTorch's headers and library (the GPU machine's); elsewhere the class
// exists and says it is unsupported, and the forward pass stays eager.
#if defined(HIPSTUDIO_TORCH_CUDA) && __has_include(<ATen/cuda/CUDAGraph.h>)
#define HIPSTUDIO_DECODE_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace hipstudio {

std::vector<std::pair<int64_t, int64_t>> decode_tail_chunks(int64_t from, int64_t layers) {
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (const int64_t size : {int64_t{1}, int64_t{3}, layers}) {
    const int64_t begin = chunks.empty() ? from : chunks.back().second;
    if (begin >= layers) break;
    chunks.emplace_back(begin, std::min(layers, begin + size));
  }
  return chunks;
}

#ifdef HIPSTUDIO_DECODE_GRAPHS

struct DecodeGraph::Impl {
  const Model& model;
  std::vector<at::Tensor> rope;  // (layers) each layer's RoPE table (Transformer::rope_table)
  const void* cache_keys = nullptr;  // identity of the cache the graphs write into
  // The step's token, position and key count (position + 1, int32 in the low half of the third
  // int64), staged for the first graph's first node to copy (graph_staging.h; inputs: its int64 [3]
  // on the device; token, position and key_count its views). `staging.mark_read` is recorded after
  // that graph.
  std::unique_ptr<GraphStaging> staging;
  at::Tensor inputs, key_count;
  // The step's token and position on the device (views of `inputs`, which the first graph's copy
  // fills from the staging) and the attention output the graph after it reads (attended: written
  // there by the eager attention; inside the tail a backend may return an output of its own
  // instead, AttentionBackend::attend_in_graph, which the tail's graphs then read where it is).
  // The graphs' own outputs (each layer's input rows x and its queries q) stay where the capture
  // allocated them, in the graphs' pool: a replay rewrites them in place, and the next graph (or
  // attention) reads them there.
  at::Tensor token, position, attended;
  std::vector<at::Tensor> x;  // (layers + 1): x[l] is layer l's input, x[layers] the step's output
  std::vector<at::Tensor> q;  // (layers)
  std::vector<at::Tensor> keys, values;  // the cache's whole per-layer tensors
  // Between two attention calls the step has no eager work, so one graph spans from one layer's
  // attention to the next: `first` is the embedding and layer 0 up to its attention, between[l]
  // layer l after attention and layer l + 1 up to its attention (the last, layer l's rest only).
  // One graph launch fewer per layer: each launch left the GPU idle a few microseconds.
  std::unique_ptr<at::cuda::CUDAGraph> first;
  std::vector<std::unique_ptr<at::cuda::CUDAGraph>> between;  // per layer
  // The tail: attention(from), after(from), before(from + 1), attention(from + 1), ..., after(last)
  // as graphs over decode_tail_chunks' layer ranges, replayed in order, captured for one backend
  // and its buffers (tail_plan); tail_out is the last one's output. refresh_tail: the same with each
  // attention refreshing its layer's mask first (tail_plan.refreshes), captured once a step that
  // refreshes them all comes (its capture writes what a refresh writes). Empty: none.
  using Graphs = std::vector<std::unique_ptr<at::cuda::CUDAGraph>>;
  Graphs tail, refresh_tail;
  const AttentionBackend* tail_backend = nullptr;
  GraphedAttention tail_plan;
  std::vector<std::pair<int64_t, int64_t>> tail_chunks;  // both tails' graphs' layer ranges (decode_tail_chunks)
  at::Tensor tail_out, refresh_tail_out;
  int64_t last_graphed_from = -1;

  Impl(const Model& m, std::vector<at::Tensor> r) : model(m), rope(std::move(r)) {}

  // The step's inputs into the staging, once the previous step's copy has read it.
  void stage(int64_t token_id, int64_t pos) {
    staging->wait_until_read();
    stage_values(token_id, pos);
  }
  void stage_values(int64_t token_id, int64_t pos) {
    int64_t* staged = staging->host();
    staged[0] = token_id;
    staged[1] = pos;
    // The key count, read through an int32 view of this int64's low half: whole below 2^31, which
    // every capture that reads it ensures (DenseAttention::decodes_in_graph; HiP's kernels take
    // tk < 2^30).
    staged[2] = pos + 1;
  }
  void copy_staged(cudaStream_t stream) { staging->copy(stream); }
  // The device's position and key count set directly (the captures' eager passes, outside any step).
  void set_device_position(int64_t pos) {
    position.fill_(pos);
    key_count.fill_(pos + 1);
  }

  at::Tensor run_embed() { return embed_tokens(model, token); }
  at::Tensor run_before(int64_t l, const at::Tensor& input) {
    return rotated_qkv_cached_row(model.config, model.weights.layers[static_cast<size_t>(l)], input, rope[static_cast<size_t>(l)],
                                  position, keys[static_cast<size_t>(l)], values[static_cast<size_t>(l)]);
  }
  // `heads_out`: the layer's attention output, [n_heads, 1, head_dim].
  at::Tensor run_after(int64_t l, const at::Tensor& input, const at::Tensor& heads_out) {
    return attention_output_and_mlp(model.config, model.weights.layers[static_cast<size_t>(l)], input,
                                    heads_out.transpose(0, 1).reshape({1, model.config.q_dim()}));
  }
  // The tail's work on layers [begin, end) of a tail from layer `from`, eagerly or under capture:
  // x and query hold layer begin's input and query (for begin == from, where the graph before the
  // tail leaves them: x[from], q[from]) and come back as layer end's (query undefined past the last).
  void run_tail(AttentionBackend& attention, int64_t from, int64_t begin, int64_t end, bool refresh, at::Tensor& x,
                at::Tensor& query) {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    for (int64_t l = begin; l < end; ++l) {
      AttentionCall call;
      call.layer = l;
      call.math = layer_attention_math(model.config, l);
      call.q = query;
      call.k = keys[static_cast<size_t>(l)];
      call.v = values[static_cast<size_t>(l)];
      call.decoding = true;
      call.out = attended;
      call.key_count = key_count;
      // Past the tail's first layer the kernel just before is run_before's RoPE and cache write,
      // after its q/k/v projection, which write only qkv, q and this position's key and value (the
      // promise of follows_query_write: keep it so if run_before changes); the first layer follows
      // whatever ran before the tail. (A chunk's first layer is its graph's root: no overlap there.)
      call.follows_query_write = l > from;
      call.refresh_in_graph = refresh;
      const at::Tensor heads_out = attention.attend_in_graph(call, position, stream);
      x = run_after(l, x, heads_out);
      query = l + 1 < model.config.n_layers ? run_before(l + 1, x) : at::Tensor();
    }
  }

  // One eager pass on a side stream (the attention launches' one-time set-up, their workspace), then
  // the captures of tail_chunks (set for `from` before), in order, into one pool of the tail's own
  // (a tail replays instead of the between graphs from `from` on, not after them; its chunks replay
  // in capture order, so they may share it), then one replay (each graph's first launch uploads it).
  // The eager pass and the replay write the cache at `next` (the next step overwrites it), as the
  // constructor's pass does.
  Graphs capture_tail(AttentionBackend& attention, int64_t from, bool refresh, int64_t next, at::Tensor* out) {
    if (tail_chunks.empty() || tail_chunks.front().first != from)
      throw std::logic_error("decode graph: the tail's chunks were not set for its first layer");
    set_device_position(next);
    c10::cuda::device_synchronize();
    Graphs graphs;
    const int64_t layers = model.config.n_layers;
    {
      const c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool());
      at::Tensor x = this->x[static_cast<size_t>(from)];
      at::Tensor query = this->q[static_cast<size_t>(from)];
      run_tail(attention, from, from, layers, refresh, x, query);
      c10::cuda::device_synchronize();
      const auto pool = at::cuda::graph_pool_handle();
      x = this->x[static_cast<size_t>(from)];
      query = this->q[static_cast<size_t>(from)];
      for (const auto& [begin, end] : tail_chunks) {
        graphs.push_back(std::make_unique<at::cuda::CUDAGraph>());
        graphs.back()->capture_begin(pool);
        // The next chunk reads x and query where this one leaves them (held here meanwhile, so no
        // later capture into the pool reuses their memory).
        run_tail(attention, from, begin, end, refresh, x, query);
        graphs.back()->capture_end();
      }
      *out = x;
      for (auto& graph : graphs) graph->replay();  // the uploads, outside any timed step
    }
    c10::cuda::device_synchronize();
    return graphs;
  }
};

bool DecodeGraph::supported() { return true; }

DecodeGraph::DecodeGraph(const Model& model, std::vector<at::Tensor> layer_rope, KVCache& cache)
    : impl_(std::make_unique<Impl>(model, std::move(layer_rope))) {
  Impl& g = *impl_;
  const ModelConfig& c = model.config;
  const auto options = at::TensorOptions().device(model.run.device).dtype(model.run.dtype);
  g.staging = std::make_unique<GraphStaging>(3, model.run.device);
  g.stage_values(0, cache.length());
  g.inputs = g.staging->device();
  g.copy_staged(c10::cuda::getCurrentCUDAStream().stream());
  g.token = g.inputs.narrow(0, 0, 1);
  g.position = g.inputs.narrow(0, 1, 1);
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the key count is the low half of an int64");
  g.key_count = g.inputs.narrow(0, 2, 1).view(at::kInt).narrow(0, 0, 1);
  g.attended = at::zeros({c.n_heads, 1, c.head_dim}, options);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    g.keys.push_back(cache.keys(l, cache.capacity()));
    g.values.push_back(cache.values(l, cache.capacity()));
  }
  g.cache_keys = g.keys.front().data_ptr();

  // Capture on a side stream, after one eager warm-up there (library handles and workspaces are
  // created outside the capture). The warm-up writes keys/values at the current position, which
  // the real step then overwrites. All graphs share one memory pool: they replay in capture order,
  // and the outputs kept here stay allocated, so no later capture reuses their memory.
  c10::cuda::device_synchronize();
  {
    const c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool());
    at::Tensor x = g.run_embed();
    for (int64_t l = 0; l < c.n_layers; ++l) {
      g.run_before(l, x);
      x = g.run_after(l, x, g.attended);
    }
    c10::cuda::device_synchronize();
    const auto pool = at::cuda::graph_pool_handle();
    auto capture = [&](auto&& work) {
      auto graph = std::make_unique<at::cuda::CUDAGraph>();
      graph->capture_begin(pool);
      work();
      graph->capture_end();
      return graph;
    };
    g.first = capture([&] {
      g.copy_staged(c10::cuda::getCurrentCUDAStream().stream());
      g.x.push_back(g.run_embed());
      g.q.push_back(g.run_before(0, g.x.back()));
    });
    for (int64_t l = 0; l < c.n_layers; ++l) {
      g.between.push_back(capture([&] {
        g.x.push_back(g.run_after(l, g.x.back(), g.attended));
        if (l + 1 < c.n_layers) g.q.push_back(g.run_before(l + 1, g.x.back()));
      }));
    }
    // One replay of each now: a graph's first launch also uploads it to the device, which a
    // benchmark's first timed step would otherwise pay (this writes the same scratch as the warm-up).
    g.first->replay();
    g.staging->mark_read(c10::cuda::getCurrentCUDAStream().stream());
    for (auto& graph : g.between) graph->replay();
  }
  c10::cuda::device_synchronize();
}

void DecodeGraph::prepare_attention(AttentionBackend& attention, const KVCache& cache) {
  Impl& g = *impl_;
  const ModelConfig& c = g.model.config;
  // The captured attention (flash's decode, HiP's kernels) computes plain attention only: a model
  // with windows, another scale or a soft-cap attends eagerly between the graphs.
  if (!plain_attention_math(c)) return;
  const GraphedAttention plan = attention.prepare_graphed_decode(g.q.front(), g.keys.front());
  if (plan.from_layer < 0 || plan.from_layer >= c.n_layers) return;
  if (g.tail.empty() || g.tail_backend != &attention || !(g.tail_plan == plan)) {
    g.tail.clear();
    g.refresh_tail.clear();
    g.tail_backend = nullptr;
    g.tail_chunks = decode_tail_chunks(plan.from_layer, c.n_layers);  // both tails' graphs, captured next
    g.tail = g.capture_tail(attention, plan.from_layer, /*refresh=*/false, cache.length(), &g.tail_out);
    g.tail_backend = &attention;
    g.tail_plan = plan;
  }
  if (plan.refreshes && g.refresh_tail.empty() && attention.next_step_refreshes_graphed_layers())
    g.refresh_tail = g.capture_tail(attention, plan.from_layer, /*refresh=*/true, cache.length(), &g.refresh_tail_out);
}

int64_t DecodeGraph::last_graphed_attention_from() const { return impl_->last_graphed_from; }

bool DecodeGraph::serves(const KVCache& cache) const {
  // The same tensors, and the same capacity (the tail's attention takes it as its key count).
  return cache.capacity() > 0 && cache.keys(0, 1).data_ptr() == impl_->cache_keys &&
         cache.capacity() == impl_->keys.front().size(1);
}

at::Tensor DecodeGraph::step(int32_t token, KVCache& cache, AttentionBackend& attention) {
  Impl& g = *impl_;
  const int64_t position = cache.length(), n_layers = g.model.config.n_layers;
  g.stage(token, position);
  g.first->replay();
  g.staging->mark_read(c10::cuda::getCurrentCUDAStream().stream());
  // The layers below a tail attend eagerly whichever capture the step replays; the backend is asked
  // about the tail only after them (their attend() calls come first), and issues its own launches
  // for the tail's layers in before_graphed_layers, chunk by chunk (HiP: the step's counts, while the
  // GPU runs the chunks before), rather than before the first graph, with the GPU idle.
  const bool has_tail = !g.tail.empty() && g.tail_backend == &attention;
  const int64_t tail_from = has_tail ? g.tail_plan.from_layer : n_layers;
  auto eager_layer = [&](int64_t l) {
    AttentionCall call;
    call.layer = l;
    call.math = layer_attention_math(g.model.config, l);
    call.q = g.q[static_cast<size_t>(l)];
    call.k = cache.keys(l, position + 1);
    call.v = cache.values(l, position + 1);
    call.first_position = position;
    call.decoding = true;
    call.out = g.attended;  // a backend that writes there spares the copy
    const at::Tensor attended = attention.attend(call);
    if (!attended.is_same(g.attended)) g.attended.copy_(attended);
    g.between[static_cast<size_t>(l)]->replay();
  };
  for (int64_t l = 0; l < tail_from; ++l) eager_layer(l);
  const GraphedStep graphed =
      has_tail ? attention.begin_graphed_step(position, g.tail_plan, /*refresh_captured=*/!g.refresh_tail.empty())
               : GraphedStep::kNone;
  const bool tail = graphed != GraphedStep::kNone;
  g.last_graphed_from = tail ? tail_from : -1;
  if (!tail)
    for (int64_t l = tail_from; l < n_layers; ++l) eager_layer(l);
  // The chunks in order, each after the backend's own launches for its layers (before_graphed_layers).
  auto replay = [&](Impl::Graphs& graphs) {
    for (size_t i = 0; i < graphs.size(); ++i) {
      attention.before_graphed_layers(g.tail_chunks.at(i).first, g.tail_chunks.at(i).second);
      graphs[i]->replay();
    }
  };
  if (graphed == GraphedStep::kRefresh) {
    replay(g.refresh_tail);
    return g.refresh_tail_out.clone();
  }
  if (tail) {
    replay(g.tail);
    return g.tail_out.clone();
  }
  return g.x.back().clone();
}

#else  // no CUDA LibTorch: the eager forward pass serves every step

struct DecodeGraph::Impl {};
bool DecodeGraph::supported() { return false; }
DecodeGraph::DecodeGraph(const Model&, std::vector<at::Tensor>, KVCache&) {
  throw std::logic_error("CUDA graphs need an engine built against a CUDA LibTorch");
}
void DecodeGraph::prepare_attention(AttentionBackend&, const KVCache&) {
  throw std::logic_error("CUDA graphs need an engine built against a CUDA LibTorch");
}
int64_t DecodeGraph::last_graphed_attention_from() const { return -1; }
bool DecodeGraph::serves(const KVCache&) const { return false; }
at::Tensor DecodeGraph::step(int32_t, KVCache&, AttentionBackend&) {
  throw std::logic_error("CUDA graphs need an engine built against a CUDA LibTorch");
}

#endif

DecodeGraph::~DecodeGraph() = default;

}  // namespace hipstudio
