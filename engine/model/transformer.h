#pragma once
// The decoder forward pass over a KV cache: prefill a chunk of tokens or decode one, step by step as
// in the paper's model (embeddings, per layer RMSNorm -> attention -> residual -> RMSNorm -> gated
// MLP -> residual, final RMSNorm, classifier), with each architecture's switches (layer_math.h).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/backends/attention_backend.h"
#include "engine/generation/decode_graph.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "engine/model/rope.h"

namespace hipstudio {

enum class LogitsFor { LastToken, AllTokens };
enum class Phase { Prefill, Decode };

// The residual streams entering layers [first_layer, last_layer] that a prefill hands back:
// streams[l - first_layer], undefined for a layer the pass did not enter. The pass sizes `streams`.
struct EntryStreams {
  int64_t first_layer = 0, last_layer = -1;
  std::vector<at::Tensor> streams;
  void reset() { streams.assign(static_cast<size_t>(std::max<int64_t>(0, last_layer - first_layer + 1)), at::Tensor()); }
};

// Over a run of decode steps: how many ran their attention inside the decode graphs, and from which
// layer on (the lowest over them; -1: none). add() takes each step's last_step_attention_graphed_from().
struct GraphedAttentionSteps {
  int64_t steps = 0, from = -1;
  void add(int64_t step_from) {
    if (step_from < 0) return;
    ++steps;
    from = from < 0 ? step_from : std::min(from, step_from);
  }
};

class Transformer {
 public:
  // `max_positions` bounds the positions this instance will see (the RoPE tables are built for it).
  Transformer(std::shared_ptr<const Model> model, int64_t max_positions);

  const Model& model() const { return *model_; }

  // Optional per-layer timing (seconds) of the attention backend call and of everything else in the
  // layer (norms, projections, RoPE, cache writes, MLP): CUDA events on the GPU, a steady clock on
  // the CPU (device_timer.h). It waits for the device after each part, so only analysis and
  // benchmark breakdown runs turn it on.
  using LayerTimer = std::function<void(int64_t layer, double attention_seconds, double other_seconds)>;
  void set_layer_timer(LayerTimer timer) { timer_ = std::move(timer); }
  int64_t max_positions() const { return max_positions_; }
  // The RoPE table (RopeTables::table) built for max_positions that layer l rotates with: rope's
  // for a full-attention layer, rope_local's for a windowed one (the batched decode step picks each
  // sequence's row).
  const at::Tensor& rope_table(int64_t layer) const { return layer_rope_.at(static_cast<size_t>(layer)); }
  // Rows per block of the row-wise work (tests set a small one to exercise the blocked path on
  // the CPU, where it is otherwise unbounded).
  void set_rows_per_block(int64_t rows) { rows_per_block_ = std::max<int64_t>(1, rows); }
  // Decode steps on CUDA replay CUDA graphs (decode_graph.h) unless turned off here or a layer
  // timer is set (timed runs stay eager: the timer needs each layer's own launches). The graphs
  // hold the cache they were captured for until a step on another cache or this object's end.
  void set_decode_graphs(bool on) { decode_graphs_ = on; }
  // Whether the last decode step replayed graphs, and whether its upper layers' attention ran
  // inside them (AttentionBackend::prepare_graphed_decode: HiP's cached steps, dense's decode steps
  // on bf16/f16), from which layer on (-1: none).
  bool last_step_graphed() const { return last_step_graphed_; }
  int64_t last_step_attention_graphed_from() const { return last_step_attention_from_; }

  // Runs `tokens` at positions [cache.length(), cache.length() + T), appends their keys/values to
  // the cache and returns float32 logits on the CPU: [1, vocab] or [T, vocab]. Each layer's
  // attention gets all T rows in one call (on CUDA a whole prompt: one causal attention per layer,
  // the fused kernels' fast path); norms, projections and the MLP run in blocks of rows.
  // Phase tells the attention backend whether this is a decode step (HiP caches masks there).
  at::Tensor forward(const std::vector<int32_t>& tokens, KVCache& cache, AttentionBackend& attention,
                     LogitsFor which = LogitsFor::LastToken, Phase phase = Phase::Prefill) const;

  // The same pass without the final RMSNorm and classifier: the residual stream [T, dim] in the
  // run's dtype, on the run's device. Callers that need the logits of many positions (the paired analysis) turn a few rows
  // at a time into logits with logits_of instead of holding [T, vocab].
  at::Tensor forward_hidden(const std::vector<int32_t>& tokens, KVCache& cache, AttentionBackend& attention,
                            Phase phase = Phase::Prefill) const;
  // The prefill's layers [first, last) (last < 0: to the end): `input` [T, dim] is the residual
  // stream entering `first` (the embeddings for 0, else as forward_hidden handed it back; not
  // modified), and the cache's layers below `first` already hold these T positions from the cache's
  // length on (what an earlier pass over the same rows wrote). Returns the stream entering `last`
  // (the last layer's output for the end) and advances the cache by T: with last < 0, the same
  // result as forward_hidden when the layers below `first` would compute what they computed before.
  // `entries`, when given, receives copies of the streams entering its layers (what a later call
  // takes as `input` to re-run the layers from there on).
  at::Tensor forward_hidden_from(int64_t first, const at::Tensor& input, KVCache& cache, AttentionBackend& attention,
                                 EntryStreams* entries = nullptr, int64_t last = -1) const;
  // Captures the CUDA graphs of a decode step on `cache` now, where the first decode step would
  // (a warm-up of every layer and a capture per layer): a benchmark's timed steps then hold decode
  // steps only. A no-op where decode steps do not replay graphs (CPU, a layer timer, graphs off).
  // Where `attention` offers it (AttentionBackend::prepare_graphed_decode), also the graph that
  // holds its upper layers' attention, and the one of its refresh steps.
  void prepare_decode_graphs(KVCache& cache, AttentionBackend& attention) const;
  // The embeddings of `tokens` [T, dim]: the stream entering layer 0.
  at::Tensor embed(const std::vector<int32_t>& tokens) const;
  // Logits [rows, vocab] of residual-stream rows [rows, dim] (final RMSNorm, classifier), float32
  // on the run's device.
  at::Tensor logits_of(const at::Tensor& hidden) const;

 private:
  at::Tensor run_layers(int64_t first, int64_t last, at::Tensor x, KVCache& cache, AttentionBackend& attention,
                        Phase phase, EntryStreams* entries) const;
  // Decode steps replay CUDA graphs: on CUDA, graphs on, no layer timer (it needs eager launches).
  bool decodes_by_graphs() const;
  std::shared_ptr<const Model> model_;
  int64_t max_positions_;
  // Rows of the row-wise work per block (kCudaPrefillRows on CUDA; unbounded on the CPU, whose
  // callers chunk prompts themselves because its dense attention holds a score matrix).
  int64_t rows_per_block_;
  RopeTables rope_, rope_local_;      // ModelConfig::rope and ::rope_local (the same tables where they agree)
  std::vector<at::Tensor> layer_rope_;  // (n_layers) each layer's table, rope_'s or rope_local_'s
  LayerTimer timer_;
  bool decode_graphs_ = true;
  mutable std::unique_ptr<DecodeGraph> graph_;
  mutable bool last_step_graphed_ = false;
  mutable int64_t last_step_attention_from_ = -1;
};

}  // namespace hipstudio
