#pragma once
// The one rule for how decode_batch's callers (generate --batch, bench model --batch) run a batched
// step: replayed from a BatchDecodeGraph where this build captures CUDA graphs (a CUDA LibTorch),
// the run is on CUDA, the caches are slots of one BatchKVStorage, no layer timer is set (a timer
// needs each layer's own launches) and the backends let every layer's attention be captured;
// eagerly through decode_batch everywhere else (the CPU, float32 dense, a backend that declines)
// and for a step the backends decline (HiP sequences whose masks do not refresh at the same step).
// The eager step stays the reference: the graphs compute the same numbers (gpu tests).
// The graphs serve one sequence set: a new set (a sequence leaving generate's batch) captures again.
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/generation/batch_decode_graph.h"
#include "engine/generation/batch_kv_storage.h"
#include "engine/generation/batched_decode.h"
#include "engine/model/transformer.h"

namespace hipstudio {

class BatchDecoder {
 public:
  // `storage`: the storage the sequences' caches are slots of (null: none, every step eager).
  BatchDecoder(const Transformer& transformer, BatchKVStorage* storage);
  ~BatchDecoder();

  // Graphs on (the default) or off: off, every step is decode_batch's eager one.
  void set_graphs(bool on) { graphs_ = on; }
  // Captures the graphs for `sequences` now, where their first step would (outside a benchmark's
  // timed steps); a no-op where steps stay eager.
  void prepare(const std::vector<BatchSequence>& sequences);
  // decode_batch(transformer, tokens, sequences, timer, storage): float32 CPU logits [N, vocab].
  at::Tensor step(const std::vector<int32_t>& tokens, const std::vector<BatchSequence>& sequences,
                  const Transformer::LayerTimer& timer = {});
  // Which capture the last step replayed (kNone: it ran eagerly), and how many steps so far did.
  GraphedStep last_step() const { return last_; }
  int64_t graphed_steps() const { return graphed_steps_; }

 private:
  bool uses_graphs(const Transformer::LayerTimer& timer) const;
  const Transformer& transformer_;
  BatchKVStorage* storage_;
  bool graphs_ = true;
  std::unique_ptr<BatchDecodeGraph> graph_;
  GraphedStep last_ = GraphedStep::kNone;
  int64_t graphed_steps_ = 0;
};

}  // namespace hipstudio
