#pragma once
// The per-layer attention interface: the forward pass hands each layer's post-RoPE queries and
// the layer's KV cache (already holding the new tokens) to a backend, which returns the attention
// output. Dense attention is one backend; HiP plugs in as another without touching the model.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include "kernels/score_logit.h"

namespace hipstudio {

// The attention maths of one layer, as its architecture defines it (ModelConfig's layer_window,
// attention_scale, attn_softcap; layer_attention_math in layer_math.h fills it, the one place that
// reads them). Every backend applies all of it, or refuses.
struct AttentionMath {
  int64_t window = 0;     // 0: full causal attention; W > 0: the row at position p sees keys (p - W, p]
  double scale = 0.0;     // softmax scale; 0: 1 / sqrt(head_dim)
  double softcap = 0.0;   // 0: none; else each scaled score s -> softcap * tanh(s / softcap)
  // The layer's rank among the full-attention layers (0 for the first), -1 for a windowed layer:
  // HiP's l_d counts these (the first l_d full-attention layers stay dense). kRankIsLayer: the
  // caller did not say, every layer is full attention and the rank is the layer index.
  static constexpr int64_t kRankIsLayer = -2;
  int64_t full_rank = kRankIsLayer;
  // The scale the layer's dot products are multiplied by (kernels/score_logit.h's one rule).
  double scale_for(int64_t head_dim) const { return hip::score_scale(hip::ScoreTransform{scale, softcap}, head_dim); }
  int64_t rank_of(int64_t layer) const { return full_rank == kRankIsLayer ? layer : full_rank; }
  // Whether this is plain Llama attention (full, 1/sqrt(head_dim), no cap): what every fused path takes.
  bool plain(int64_t head_dim) const {
    return window == 0 && softcap == 0.0 && scale_for(head_dim) == hip::score_scale(hip::ScoreTransform{}, head_dim);
  }
};

struct AttentionCall {
  int64_t layer = 0;
  AttentionMath math;          // the layer's window, scale and soft-cap
  at::Tensor q;                // [n_heads, T, head_dim], post-RoPE
  at::Tensor k;                // [n_kv_heads, first_position + T, head_dim], post-RoPE, whole cache so far
  at::Tensor v;                // [n_kv_heads, first_position + T, head_dim]
  int64_t first_position = 0;  // position of q's first row; row i attends to keys [0, first_position + i] (math.window: the last W of them)
  bool decoding = false;       // a decode step (one new token) rather than (a chunk of) the prompt
  // Optional: a contiguous [n_heads, T, head_dim] tensor of q's dtype a backend may write the result
  // into (and return), sparing the caller a copy; a backend that cannot returns a new tensor.
  at::Tensor out;
  // The caller's promise (a decode graph's tail, past its first layer): the kernel right before this
  // call on the stream is the layer's RoPE and cache write, after the layer's q/k/v projection (both
  // let their dependents start at once), and everything else the call reads was in place before
  // that projection started; a backend may then overlap them (HiP passes it on as
  // gpu::AttentionLaunch::mask_before_prior_kernel, which states it in full).
  bool follows_query_write = false;
  // Inside a decode graph's capture (attend_in_graph): the call refreshes the layer's cached mask
  // first, the capture of a refresh step (GraphedAttention::refreshes).
  bool refresh_in_graph = false;
  // Inside a decode graph's capture: int32 [1] on the device, the query's position + 1 (the keys
  // the query sees) when the graph replays, for kernels that take a key count.
  at::Tensor key_count;
};

// One layer's decode attention for a batch of sequences whose caches are slots of one storage
// (engine/generation/batch_kv_storage.h), handed to a backend in one call so that it can attend
// every sequence in one launch (AttentionBackend::attend_batch). Sequence i's query sits at
// positions[i]; its keys and values are rows [starts[i], starts[i] + positions[i]] of k and v, its
// slot rows [starts[i], starts[i] + capacities[i]), and the slots ascend (starts[i] +
// capacities[i] <= starts[i + 1]). The new keys and values are already written.
struct BatchAttentionCall {
  int64_t layer = 0;
  AttentionMath math;  // the layer's window, scale and soft-cap
  at::Tensor q;        // [B, n_heads, 1, head_dim], post-RoPE (last dimension contiguous)
  at::Tensor k, v;     // [n_kv_heads, rows, head_dim]: the storage's whole layer tensors
  std::vector<int64_t> positions, starts, capacities;  // (B) on the host
  // The same on q's device, int32, made once per step for every layer: key_counts (B) positions +
  // 1, key_starts (B) starts, query_offsets (B + 1) 0, 1, ..., B and key_offsets (B + 1) starts
  // followed by the last slot's end (flash's variable-length form).
  at::Tensor key_counts, key_starts, query_offsets, key_offsets;
  // Inside a batched decode graph's capture (attend_batch_in_graph; undefined / false elsewhere):
  // device_positions, int64 (B) on q's device, each query's position when the graph replays (the
  // host's `positions` then hold the capture's, which a backend must not bake in; key_counts hold
  // the replay's too); step_values, int64 on q's device, the values the backend's
  // begin_graphed_batch_step staged for the replayed step (BatchGraphedAttention::step_values);
  // refresh_in_graph: the call refreshes every sequence's mask of the layer first (the capture of
  // a refresh step).
  at::Tensor device_positions, step_values;
  bool refresh_in_graph = false;
  // One sequence's call, as a batch-1 step would hand it: q [n_heads, 1, head_dim], its cache's keys
  // and values up to its position.
  AttentionCall alone(int64_t i) const;
};

// What a backend lets a decode step's CUDA graph (decode_graph.h) capture of its attention.
struct GraphedAttention {
  int64_t from_layer = -1;  // layers [from_layer, n_layers) can attend inside the graph; -1: none
  uint64_t buffers = 0;     // identity of the device buffers a capture bakes in: a new one makes it stale
  bool refreshes = false;   // their refresh steps too (a second capture, with call.refresh_in_graph)
  bool operator==(const GraphedAttention& o) const {
    return from_layer == o.from_layer && buffers == o.buffers && refreshes == o.refreshes;
  }
};

// What a backend lets a batched decode step's CUDA graphs (batch_decode_graph.h) capture: every
// layer's attention of the batch or nothing (the step then runs eagerly, decode_batch).
struct BatchGraphedAttention {
  bool graphed = false;     // every layer's attention can run inside the graphs
  uint64_t buffers = 0;     // identity of the device buffers a capture bakes in: a new one makes it stale
  bool refreshes = false;   // the refresh steps too (a second capture, with call.refresh_in_graph)
  // int64 values per step that begin_graphed_batch_step writes into the graphs' staging (copied to
  // the device with the tokens, BatchAttentionCall::step_values): per-step inputs a backend would
  // otherwise copy with a launch of its own.
  int64_t step_values = 0;
  // What the captures' eager passes and first replays stage instead (step_values of them): values
  // the replayed kernels may read whatever the backends' state (a capture runs before any step).
  std::vector<int64_t> capture_values;
  bool operator==(const BatchGraphedAttention& o) const {
    return graphed == o.graphed && buffers == o.buffers && refreshes == o.refreshes && step_values == o.step_values &&
           capture_values == o.capture_values;
  }
};

// The form of the tensors a decode graph holds (a layer's query and its whole cache keys), as a
// backend's prepare_graphed_decode sees them before every graphed step: what it decides from their
// form it decides once per form, not once per step.
struct DecodeGraphForm {
  const void* q = nullptr;
  const void* k = nullptr;
  c10::Device device = c10::kCPU;
  at::ScalarType dtype = at::kFloat;
  int64_t heads = 0, kv_heads = 0, head_dim = 0, capacity = 0;
  static DecodeGraphForm of(const at::Tensor& q, const at::Tensor& k) {
    return {q.data_ptr(), k.data_ptr(), q.device(), q.scalar_type(), q.size(0), k.size(0), q.size(-1), k.size(1)};
  }
  bool operator==(const DecodeGraphForm& o) const {
    return q == o.q && k == o.k && device == o.device && dtype == o.dtype && heads == o.heads &&
           kv_heads == o.kv_heads && head_dim == o.head_dim && capacity == o.capacity;
  }
};

// A new GraphedAttention::buffers identity, unique in the process across every backend (so that
// a capture made for one backend's buffers never matches another's plan).
inline uint64_t next_graph_buffers_id() {
  static std::atomic<uint64_t> ids{0};
  return ++ids;
}

// Which capture a decode step replays for the layers a GraphedAttention names.
enum class GraphedStep { kNone, kCached, kRefresh };

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  virtual std::string name() const = 0;
  // Returns [n_heads, T, head_dim] in q's dtype.
  virtual at::Tensor attend(const AttentionCall& call) = 0;
  // Prefill chunks are multiples of this many tokens (HiP: b_q, so a chunk boundary never splits a
  // query block and chunked prefill computes the same masks as one pass).
  virtual int64_t chunk_multiple() const { return 1; }

  // A batched decode step's attention of one layer (BatchAttentionCall), asked of the first
  // sequence's backend with every sequence's (sequences[i] attends sequence i; this is
  // sequences[0]): [B, n_heads, head_dim] where it attends all of them in one call, undefined where
  // it cannot (other backends in the batch, this device or dtype, the layer's maths), and the
  // caller then calls each sequence's attend() with call.alone(i). Nothing is done for an undefined
  // answer: the state of no sequence's backend moves. The default cannot.
  virtual at::Tensor attend_batch(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences) {
    (void)call, (void)sequences;
    return {};
  }

  // Decode steps replayed from CUDA graphs. A backend whose decode attention of the upper layers
  // runs on fixed device buffers can let the graph capture those calls, so that a step launches no
  // attention of its own there (each eager launch between two graphs left the GPU idle a few
  // microseconds). The default captures nothing and every step calls attend().
  // prepare_graphed_decode: the layers a capture may hold, given a layer's query (n_heads, 1,
  // head_dim) and whole cache keys as the graphs hold them (their shapes, dtype and device), making
  // the buffers it reads (called before capturing, outside any capture).
  virtual GraphedAttention prepare_graphed_decode(const at::Tensor& q, const at::Tensor& k) {
    (void)q, (void)k;
    return {};
  }
  // Which capture made under `plan` the decode step at `position` can replay (refresh_captured:
  // whether a refresh step's capture exists besides the cached steps' one), asked once the layers
  // below plan.from_layer have attended (their attend() calls come first). kCached / kRefresh: the
  // backend has done the step's bookkeeping for those layers and its buffers hold the step's inputs,
  // or will once before_graphed_layers has run for the layers that read them (launches it makes
  // are ordered before the graphs replayed after them); the caller must then replay that capture,
  // calling before_graphed_layers before each of its graphs. kNone: the step calls attend() for the
  // layers from plan.from_layer on.
  virtual GraphedStep begin_graphed_step(int64_t position, const GraphedAttention& plan, bool refresh_captured) {
    (void)position, (void)plan, (void)refresh_captured;
    return GraphedStep::kNone;
  }
  // Called before the step replays the graph of layers [begin, end) of the capture that
  // begin_graphed_step chose, in layer order: a backend issues here what those layers need and
  // begin_graphed_step left pending, so that the host issues it while the GPU runs the graphs
  // before (HiP: its count copy, before the first graph that holds a sparse layer rather than
  // before the first graph, where the GPU waited 21 us a step for the host to issue it and that
  // graph: kernels/BENCHMARKS_HISTORY.md).
  virtual void before_graphed_layers(int64_t begin, int64_t end) { (void)begin, (void)end; }
  // Whether the next decode step refreshes every layer a capture holds, so that a refresh step's
  // capture (its eager pass and first replay write what a refresh writes) loses nothing cached.
  virtual bool next_step_refreshes_graphed_layers() const { return false; }
  // One layer's attention as the graph captures it, on `stream` (a cudaStream_t): call.k / call.v
  // hold the whole cache (every position it can reach), `position` (int64 [1] on the device) the
  // query's position when the graph replays, call.out an output buffer. Returns the output: call.out
  // where the backend writes there, or a tensor of its own kernel's (a [n_heads, 1, head_dim] view,
  // allocated inside the capture, so at one address every replay) that the caller reads instead of
  // paying a copy into call.out (dense: LibTorch's flash call takes no output argument).
  virtual at::Tensor attend_in_graph(const AttentionCall& call, const at::Tensor& position, void* stream) {
    (void)call, (void)position, (void)stream;
    throw std::logic_error(name() + " attention cannot run inside a decode graph");
  }

  // Batched decode steps replayed from CUDA graphs (batch_decode_graph.h), asked of the first
  // sequence's backend with every sequence's, as attend_batch is. The default captures nothing.
  // prepare_graphed_batch: whether every layer's attention of this batch can run inside the graphs,
  // given a layer's call as the graphs hold it (the storage's whole tensors, the graphs' device
  // fields; its host positions the capture's), making the buffers it reads (outside any capture).
  virtual BatchGraphedAttention prepare_graphed_batch(const BatchAttentionCall& call,
                                                      const std::vector<AttentionBackend*>& sequences) {
    (void)call, (void)sequences;
    return {};
  }
  // Which capture made under `plan` the batched step at `positions` (B, on the host) can replay, as
  // begin_graphed_step; kCached / kRefresh: the backends' bookkeeping for the step is done and
  // `step_values` (plan.step_values of them) holds what the replay reads; kNone: no state moved, and
  // the step runs eagerly.
  virtual GraphedStep begin_graphed_batch_step(const std::vector<int64_t>& positions, const BatchGraphedAttention& plan,
                                               bool refresh_captured, const std::vector<AttentionBackend*>& sequences,
                                               int64_t* step_values) {
    (void)positions, (void)plan, (void)refresh_captured, (void)sequences, (void)step_values;
    return GraphedStep::kNone;
  }
  // One layer's attention of the batch as the graph captures it, on `stream` (a cudaStream_t), with
  // the call's device fields read when the graph replays: [B, n_heads, head_dim], a tensor that
  // stays at one address every replay (allocated inside the capture, or the backend's own).
  virtual at::Tensor attend_batch_in_graph(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences,
                                           void* stream) {
    (void)call, (void)sequences, (void)stream;
    throw std::logic_error(name() + " attention cannot run inside a batched decode graph");
  }
};

// Causal softmax(softcap(scale q k^T)) v with grouped-query heads over each row's visible keys
// (call.math: its window, scale and cap); softmax in float32 (float64 for float32 on the CPU).
class DenseAttention final : public AttentionBackend {
 public:
  std::string name() const override { return "dense"; }
  at::Tensor attend(const AttentionCall& call) override;
  // How attend computes on `device`: LibTorch's fused kernel (CUDA with LibTorch 2; no score
  // matrix), or explicit scores in score_type (float64 for float32 on the CPU, else float32). The
  // memory estimate asks these instead of repeating the rule.
  static bool fused_on(const c10::Device& device);
  static at::ScalarType score_type(const c10::Device& device, at::ScalarType dtype);

  // Decode steps with the attention of every layer inside the decode graph: LibTorch's flash
  // attention (the kernels attend() runs through SDPA for a decode step: split over the keys, the
  // query heads of a KV group folded into rows), called in its variable-length form with the key
  // count read on the device (seqused_k) over the whole cache. Why: eagerly, each layer's attention
  // between two graph launches left the GPU idle ~9 us (kernels/BENCHMARKS_HISTORY.md's
  // timeline), 0.28 ms a 32-layer step that a fair dense baseline does not pay.
  // decodes_in_graph: whether this build and q/k's form allow it (CUDA, bf16/f16, head_dim a
  // multiple of 8 up to 256, LibTorch with flash's seqused_k); float32 stays eager.
  static bool decodes_in_graph(const at::Tensor& q, const at::Tensor& k);
  // A batch in one call of flash's variable-length form (key offsets at the slots' starts, the key
  // counts read on the device), where decodes_in_graph holds for the batch's tensors and the layer's
  // maths is full attention without a soft-cap; any backends (dense keeps no per-sequence state).
  at::Tensor attend_batch(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences) override;
  GraphedAttention prepare_graphed_decode(const at::Tensor& q, const at::Tensor& k) override;
  GraphedStep begin_graphed_step(int64_t position, const GraphedAttention& plan, bool refresh_captured) override;
  at::Tensor attend_in_graph(const AttentionCall& call, const at::Tensor& position, void* stream) override;
  // Batched steps in CUDA graphs: attend_batch's one call, which reads everything per step from the
  // device (key counts, offsets), where attend_batch takes the batch (decodes_in_graph, full
  // attention without a soft-cap); nothing of its own is baked in.
  BatchGraphedAttention prepare_graphed_batch(const BatchAttentionCall& call,
                                              const std::vector<AttentionBackend*>& sequences) override;
  GraphedStep begin_graphed_batch_step(const std::vector<int64_t>& positions, const BatchGraphedAttention& plan,
                                       bool refresh_captured, const std::vector<AttentionBackend*>& sequences,
                                       int64_t* step_values) override;
  at::Tensor attend_batch_in_graph(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences,
                                   void* stream) override;

 private:
  // The variable-length form's cumulative offsets for one sequence, int32 [2] on the device: [0, 1]
  // and [0, capacity] (offsets_capacity_); plan_: what prepare_graphed_decode offered for the
  // graphs' tensors of form form_ (decided once per form; the identity changes only with the offsets).
  at::Tensor query_offsets_, key_offsets_;
  int64_t offsets_capacity_ = -1;
  uint64_t offsets_id_ = 0;  // the offsets' GraphedAttention::buffers identity
  DecodeGraphForm form_;
  GraphedAttention plan_;
};

}  // namespace hipstudio
