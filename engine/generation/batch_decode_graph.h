#pragma once
// A batched decode step (batched_decode.h: N sequences, one token each, their caches slots of one
// BatchKVStorage) replayed from CUDA graphs, with every layer's attention inside them: the batch's
// embedding, each layer's RMSNorm, q/k/v, RoPE at the positions read on the device, the cache
// writes, the attention of every sequence in one call (AttentionBackend::attend_batch_in_graph:
// dense's flash over the slots, HiP's sparse attention over each sequence's mask, and HiP's
// refresh steps with each sequence's mask search), the output projection, the MLP and the logits.
// Why: an eager batched step is launch-bound (~35 LibTorch launches a layer, the host's launch time
// setting the step time: at batch 6 x 128k HiP took 14.4 ms a step against a 6.3 ms memory floor).
// The graphs are decode_tail_chunks' layer ranges from layer 0 (one layer, three, the rest), so
// that the host's launch of one chunk overlaps the GPU's work on the one before, as batch 1's tail.
//
// The same discipline as batch 1's graphs (decode_graph.h): the step's tokens, positions, storage
// rows, key counts and the backend's step values reach the device through pinned memory that the
// first graph's first node copies (graph_staging.h); the backend decides once per step which capture
// replays (begin_graphed_batch_step: kCached, kRefresh, or kNone, and then the step runs eagerly);
// the refresh steps' capture is made once a step that refreshes every sequence's graphed layers
// comes (its capture writes what a refresh writes). The graphs bake in the addresses of the weights,
// the RoPE tables, the storage's tensors and the backends' buffers, so an instance serves one
// (Transformer, BatchKVStorage, sequence set): serves() says whether it is this one.
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/backends/attention_backend.h"
#include "engine/generation/batch_kv_storage.h"
#include "engine/generation/batched_decode.h"
#include "engine/model/transformer.h"

namespace hipstudio {

class BatchDecodeGraph {
 public:
  // True when this build can capture CUDA graphs (the engine was built against a CUDA LibTorch).
  static bool supported();

  // Asks the first sequence's backend whether every layer's attention of this batch can be
  // captured (prepare_graphed_batch: a model of plain attention only, plain_attention_math; every
  // cache a slot of `storage` in ascending slot order, each with room for one more position) and,
  // where it can, captures the cached steps' graphs (one eager pass and the capture, on a side
  // stream; their passes write each cache at its length, which the next step overwrites), and the
  // refresh steps' where the next step refreshes.
  // Elsewhere graphed() is false and every step() declines. Throws std::logic_error where the build
  // cannot capture graphs (supported()).
  BatchDecodeGraph(const Transformer& transformer, BatchKVStorage& storage, const std::vector<BatchSequence>& sequences);
  ~BatchDecodeGraph();
  BatchDecodeGraph(const BatchDecodeGraph&) = delete;
  BatchDecodeGraph& operator=(const BatchDecodeGraph&) = delete;

  bool graphed() const;
  // Whether the instance was made for this storage and these sequences (their caches and backends,
  // in this order).
  bool serves(const BatchKVStorage& storage, const std::vector<BatchSequence>& sequences) const;

  // decode_batch's step from the graphs, where the backends let this step replay one (every cache
  // with room for its token, as decode_batch requires): float32 CPU logits [N, vocab], every cache
  // advanced by one. Undefined where the step must run eagerly instead (graphed() false, or the
  // backend declines this step): nothing moved then.
  at::Tensor step(const std::vector<int32_t>& tokens, const std::vector<BatchSequence>& sequences);
  // Which capture the last step() replayed (kNone: it declined).
  GraphedStep last_step() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hipstudio
