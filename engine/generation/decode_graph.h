#pragma once
// A decode step (one new token) of the forward pass on CUDA with its row-wise work replayed from
// CUDA graphs: per layer one graph before attention (RMSNorm, q/k/v projection, RoPE at a
// device-side position, the cache write) and one after it (output projection, MLP), plus one for
// the embedding; one layer's "after" and the next layer's "before" are captured as one graph.
// Attention a backend cannot capture runs eagerly between them. Why: eagerly a step is ~35 LibTorch
// launches a layer, ~1,100 for an 8B model, and the host's launch time, not the weights' bandwidth,
// set the step time; replayed, a layer is one graph launch and attention.
// A backend that can (AttentionBackend::prepare_graphed_decode: dense in bf16/f16, HiP's cached
// steps) also has its attention captured: the "tail" (a few graphs in a row, below) runs layers
// [from, n_layers) with their attention inside, reading the query's position and key count from the
// device, so such a step launches the embedding graph, any eager layers' attention and graphs, and
// the tail. Each eager attention between two graphs left the GPU idle ~9 us (kernels/BENCHMARKS.md,
// timelines). Where the backend can (HiP's refreshes with the few-search mask
// kernel), a second tail holds its refresh steps: each layer's mask search (reading the position on
// the device) before its attention.
// A tail is replayed as a few graphs over consecutive layers (decode_tail_chunks): launching one
// graph of all 32 layers of an 8B model took the host ~150-290 us (~1 us a node) while the GPU,
// done with the embedding graph, waited; the later chunks' launches overlap the earlier chunks'
// work (kernels/BENCHMARKS_HISTORY.md).
// The step's token and position reach the device through pinned host memory that the embedding
// graph's first node copies (no eager launch before the first graph), and the backend is asked
// which tail to replay only once the layers below it have been launched, and issues its own
// launches for the tail's layers chunk by chunk (AttentionBackend::before_graphed_layers), so that
// they are issued while the GPU is busy.
//
// The graphs bake in the addresses of the weights, the RoPE tables, one KVCache's tensors and
// their own static buffers, so an instance serves one (Transformer, KVCache) pair; graphs() says
// whether the build can capture them at all (a CUDA LibTorch).
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/backends/attention_backend.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "engine/model/rope.h"

namespace hipstudio {

// The layer ranges [begin, end) of a tail from layer `from` to `layers`, one graph each: one layer,
// then three, then the rest. Each graph's launch costs the host ~7 us a layer (traced); the GPU runs
// ~170 us a layer of an 8B model at 128k, so each launch after the first is hidden behind the chunk
// before it, and the first one (~7 us) behind the embedding graph. (A small model's layers, a few
// us each, hide little.) More chunks would only add graph boundaries (a few us each: programmatic
// launches do not cross them).
std::vector<std::pair<int64_t, int64_t>> decode_tail_chunks(int64_t from, int64_t layers);

class DecodeGraph {
 public:
  // True when this build can capture CUDA graphs (the engine was built against a CUDA LibTorch).
  static bool supported();

  // Captures the graphs for `cache` (one warm-up pass and the capture, on a side stream). The
  // first decode step of a cache pays this once. layer_rope: each layer's RoPE table
  // (Transformer::rope_table: rope's or rope_local's), [positions, 2, head_dim].
  DecodeGraph(const Model& model, std::vector<at::Tensor> layer_rope, KVCache& cache);
  ~DecodeGraph();
  DecodeGraph(const DecodeGraph&) = delete;
  DecodeGraph& operator=(const DecodeGraph&) = delete;

  // Whether the graphs were captured for this cache (its tensors are where the graphs write).
  bool serves(const KVCache& cache) const;

  // Captures the tail graph for `attention` if it offers one (prepare_graphed_decode; only for a
  // model whose every layer's attention is plain, plain_attention_math) and the
  // one held was captured for another backend or buffers; and the refresh steps' tail where the
  // backend offers it and its next step refreshes every layer the tail holds. Outside the timed
  // steps, as the rest. Their eager passes write the cache at cache.length() (the next step
  // overwrites it), as the constructor's does.
  void prepare_attention(AttentionBackend& attention, const KVCache& cache);

  // Runs `token` at position cache.length(): appends its keys/values to the cache (the caller
  // advances it) and returns the residual stream [1, dim] (a copy: the static buffer is reused).
  at::Tensor step(int32_t token, KVCache& cache, AttentionBackend& attention);

  // The first layer whose attention the last step replayed inside the tail graph; -1: none did.
  int64_t last_graphed_attention_from() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hipstudio
