#pragma once
// HiP as an attention backend of the model (paper Algorithm 2): HiP replaces full-attention layers
// only. A layer with a sliding window (AttentionCall::math.window > 0) keeps its window attention,
// and l_d (`dense_layers`) counts the full-attention layers: the first l_d of them stay dense
// (in a model without windows, the first l_d layers). Every other full-attention layer estimates a
// block mask with the hierarchical search and runs block-sparse attention over sink + selected
// blocks + dense tail, with the layer's softmax scale and soft-cap (the search itself reads raw dot
// products: a positive scale and the monotonic cap leave every top-k unchanged). While decoding, a layer's mask is
// re-estimated every `refresh_every` (r_m) steps and reused in between: the cached mask keeps its
// dense_from, so tokens generated since the refresh fall in the dense tail.
//
// On the CPU, the float64 reference in kernels/ computes masks and attention. On CUDA, the CUDA
// kernels do (kernels/torch/hip_torch.h) when they were built, the layer's scale and soft-cap
// inside the sparse attention; otherwise the tensors are copied to the CPU reference and
// `backend_note()` says so.
//
// HipModelParams::method picks where the sparse layers' masks come from: HiP's search, or another
// registry method (kernels/methods/selection_method.h) at the same budget, whose masks then run
// through the same block-sparse attention (the CUDA kernels where the method has a tensor
// implementation, else the float64 reference). A method re-selects at every r_m refresh by its
// decode rule; one with prompt state (vslash) takes it from the layer's last prefill call (the
// prompt, or its last chunk). Decode graphs and the batched step serve HiP's search only.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/formats/model_config.h"
#include "engine/backends/attention_backend.h"
#include "engine/runtime/phase_profile.h"
#include "engine/analysis/hip_model_params.h"
#include "kernels/mask_reference.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::hip_torch {
struct MaskTensors;  // kernels/torch/hip_torch.h
}  // namespace hipstudio::hip_torch

namespace hipstudio {

// Whether HiP with l_d `dense_layers` replaces `layer`'s attention: a full-attention layer past the
// first l_d full-attention layers. What reports and the GUI mark; HipAttention decides the same
// from each call's AttentionMath.
bool hip_replaces_layer(const ModelConfig& config, int64_t dense_layers, int64_t layer);
// The same from a layer's AttentionMath (the one rule both read).
bool hip_replaces(const AttentionMath& math, int64_t layer, int64_t dense_layers);
// The first layer HiP replaces (n_layers when none): the layers below it compute as dense does.
int64_t first_hip_layer(const ModelConfig& config, int64_t dense_layers);

// Throws hip::HipParamError naming the broken rule (HiP's rules, plus l_d >= 0 and r_m >= 1).
void validate_hip_model_params(const HipModelParams& params);

// What one layer call did; the analysis and the offloading simulator read these.
struct HipLayerEvent {
  int64_t layer = 0;
  int64_t first_position = 0;       // position of the first query
  int64_t queries = 0;              // T of this call (1 while decoding)
  bool dense = false;               // layer < l_d: dense attention, no mask
  bool refreshed = false;           // a mask was estimated in this call (always for prefill)
  // The mask used, valid during the callback: null for dense layers, and on the CUDA path unless
  // access recording is on (copying masks to the host would stall the GPU).
  const hip::MaskResult* mask = nullptr;
  const AttentionCall* call = nullptr;    // the inputs (post-RoPE q, cache k/v)
  // CUDA kernels' prefill mask of this call's rows, (hq, ceil(T / b_q), kb) int32 on the device,
  // undefined elsewhere: the views layer takes HiP's mask from here instead of recomputing it.
  at::Tensor device_blocks;
  double mask_seconds = 0.0;        // mask estimation
  // Recording mask_keys / sparse_keys (tracing the refresh's search again): part of the call's
  // time that is neither mask estimation nor attention; latency breakdowns leave it out.
  double record_seconds = 0.0;
  double attention_seconds = 0.0;   // sparse (or dense) attention
  // With record_access (sparse layers, decode steps only): per query head, the key positions read.
  // mask_keys: the sampled keys of every representative block scored by the search (empty when
  // the cached mask was reused); sparse_keys: the keys sparse attention used for the last query.
  std::vector<std::vector<int32_t>> mask_keys;    // (heads) ascending, unique
  std::vector<std::vector<int32_t>> sparse_keys;  // (heads) ascending
};

class HipAttention final : public AttentionBackend {
 public:
  HipAttention(const HipModelParams& params, int64_t n_layers);
  // Not copied: a copy would share the decode buffers (and their generation) a captured graph reads.
  HipAttention(const HipAttention&) = delete;
  HipAttention& operator=(const HipAttention&) = delete;
  std::string name() const override { return "hip"; }
  // Which implementation ran the last sparse layer call and, on CUDA without kernels, why not.
  const std::string& backend_note() const { return backend_note_; }
  at::Tensor attend(const AttentionCall& call) override;
  int64_t chunk_multiple() const override { return params_.hip.b_q; }
  // On CUDA with the kernels, no observer, no access recording and no per-call timing, the cached
  // steps' sparse layers (l_d and up) can run inside a decode graph: every HiP layer's rows and
  // count tables live in one set of device buffers, and a graphed step copies its counts in one
  // launch (before_graphed_layers) before the first graph with a sparse layer. Where the few-search
  // mask kernel serves a refresh (bf16/f16, head_dim 64 or 128), the refresh steps can too: each
  // layer's search reads the position on the device and writes its rows itself, the attention then
  // reads them. Where the dense attention can run inside the graph too
  // (DenseAttention::decodes_in_graph), the l_d dense layers join the capture (from layer 0), as
  // the dense baseline's layers do.
  // A batched decode step's layer in one launch where every sequence's backend is a HiP backend of
  // these parameters on CUDA with the kernels and without access recording, one object per
  // sequence: each refreshes its own mask when due (its own search), and one sparse attention
  // launch covers every sequence's rows and keys; the l_d dense layers go to
  // DenseAttention::attend_batch. Each sequence's observer hears of its part (its refresh, timed
  // with sync timing; the launch's time in the first sequence's event only).
  at::Tensor attend_batch(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences) override;
  // Batched steps in CUDA graphs (batch_decode_graph.h), where every sequence's backend is one that
  // attend_batch takes and graphable, and the l_d dense layers can attend inside the graph too
  // (DenseAttention::prepare_graphed_batch): the sequences' decode rows and count tables become
  // slices of one set of batch buffers (their contents and cached masks kept), so that the one
  // sparse attention launch reads every sequence's rows where they are, and a cached step gathers
  // every layer's counts of each sequence's tail extra in one launch inside the graph (the extras
  // staged with the step's tokens: BatchGraphedAttention::step_values, one a sequence). Refresh
  // steps too where the few-search mask kernel serves every sequence's refresh: each sequence's
  // search (its own keys, its position on the device) writes its rows before the layer's launch.
  // The sequences refresh together (they do after prefills and batched steps alike); a step where
  // they do not runs eagerly.
  BatchGraphedAttention prepare_graphed_batch(const BatchAttentionCall& call,
                                              const std::vector<AttentionBackend*>& sequences) override;
  GraphedStep begin_graphed_batch_step(const std::vector<int64_t>& positions, const BatchGraphedAttention& plan,
                                       bool refresh_captured, const std::vector<AttentionBackend*>& sequences,
                                       int64_t* step_values) override;
  at::Tensor attend_batch_in_graph(const BatchAttentionCall& call, const std::vector<AttentionBackend*>& sequences,
                                   void* stream) override;
  GraphedAttention prepare_graphed_decode(const at::Tensor& q, const at::Tensor& k) override;
  GraphedStep begin_graphed_step(int64_t position, const GraphedAttention& plan, bool refresh_captured) override;
  bool next_step_refreshes_graphed_layers() const override;
  void before_graphed_layers(int64_t begin, int64_t end) override;
  at::Tensor attend_in_graph(const AttentionCall& call, const at::Tensor& position, void* stream) override;

  const HipModelParams& params() const { return params_; }
  // Called after every layer call with what it did.
  void set_observer(std::function<void(const HipLayerEvent&)> observer) { observer_ = std::move(observer); }
  // Forget cached decode masks (a new sequence starts); a method's prompt state stays until the
  // next prefill call replaces it.
  void reset();
  // A new r_m (>= 1, else hip::HipParamError) for the decode steps that follow; forgets cached
  // decode masks, so the next step refreshes as the first after a prefill does.
  void set_refresh_every(int64_t refresh_every);
  // Fill HipLayerEvent::mask_keys / sparse_keys on decode steps (the refresh's search is traced).
  void set_record_access(bool on) { record_access_ = on; }
  // Synchronize the device after mask estimation and after attention so that the event's seconds
  // are the GPU's (benchmark breakdowns only: it stalls the pipeline).
  void set_sync_timing(bool on) { sync_timing_ = on; }
  // HIPSTUDIO_PROFILE=1 (phase_profile.h): one stderr line splitting the CUDA decode steps' time
  // since the last call into refresh, attention and recording phases.
  void print_profile(const std::string& what) { profile_.print(what); }

 private:
  struct LayerState {
    hip::MaskResult decode_mask;   // mask of the last refresh (one query block)
    bool valid = false;
    int64_t steps_since_refresh = 0;
    // CUDA path, all on the device so that a decode step never waits on the host: the refresh's
    // rows (hq, 1, kb + tail_room) holding each head's selected blocks followed by the next
    // tail_room key blocks of the dense tail from refresh_hi on, and (tail_room + 1, hq, 1) the
    // counts of each row a step attends, count + extra at [extra] (extra: tail blocks passed since
    // the refresh), so that a cached step reads a view of them and launches nothing to make them.
    at::Tensor gpu_rows, gpu_counts_by_extra;
    int64_t refresh_hi = 0;
    // The refresh's mask on the host, kept only while access recording is on.
    std::vector<int32_t> host_blocks, host_counts;
    // What a non-HiP method keeps from the layer's prefill for its decode refreshes (or null).
    std::shared_ptr<const hip::methods::MethodState> method_state;
  };
  // The device buffers of the CUDA decode path, shared by every HiP layer: (layers, hq, 1, kb +
  // tail_room) rows, (layers, tail_room + 1, hq, 1) counts by extra, (layers, hq, 1) the counts a
  // graphed step attends, and the graphed launches' split workspace. A layer's LayerState views
  // its slices. Made again (a new generation, every cached mask forgotten) only when their shape
  // or device changes.
  struct DecodeBuffers {
    at::Tensor rows, counts_by_extra, counts_now, workspace;
    int64_t pending_extra = -1;  // a cached step's count row begin_graphed_step chose, not yet copied to counts_now
    // The views every user of the buffers takes, made once with them: each layer's slices of rows
    // and counts_by_extra, and counts_for_extra[e] (counts_by_extra.select(1, e)), the source of a
    // cached step's count copy. A graphed step makes none: making them each step was host time the
    // GPU waited on (a decode timeline showed a 42 us gap before a refresh step's graphs, 21
    // us before a cached step's; kernels/BENCHMARKS.md).
    std::vector<at::Tensor> layer_rows, layer_counts_by_extra, counts_for_extra;
    bool workspace_made = false;
    uint64_t generation = 0;
    // The batch buffers (BatchDecodeBuffers::id) whose slice `batch_slot` rows and counts_by_extra
    // are, 0: their own.
    uint64_t batch_id = 0;
    int64_t batch_slot = -1;
    bool refresh_in_graph = false;  // a refresh can run inside the graphs last prepared (refresh_in_decode_graph_supported)
    DecodeGraphForm refresh_asked;  // the form of the graphs' tensors it was asked of
    GraphedAttention plan;          // what prepare_graphed_decode last offered
  };
  // A batched graph's buffers, held by the first sequence's backend: every sequence's decode rows
  // (layers, B, hq, 1, kb + tail_room) and counts by extra (layers, B, tail_room + 1, hq, 1), whose
  // slices [l][i] are sequence i's layer l (DecodeBuffers' views), the counts a graphed step attends
  // (layers, B, hq, 1), gathered inside the graph, and the batched launch's split workspace.
  struct BatchDecodeBuffers {
    uint64_t id = 0;
    std::vector<const HipAttention*> members;  // (B) the sequences' backends, for identity only
    at::Tensor rows, counts_by_extra, counts_now, workspace;
    bool workspace_made = false;
    bool refresh_in_graph = false;  // every sequence's refresh can run inside the graphs
    BatchGraphedAttention plan;     // what prepare_graphed_batch last offered
  };
  // The sequences' backends as HiP backends attend_batch takes together (these parameters, the CUDA
  // kernels, no access recording, each once, this one first), or empty.
  std::vector<HipAttention*> batch_peers(const at::Tensor& q, const std::vector<AttentionBackend*>& sequences);
  // Whether `hips` (batch_peers) hold slices of batch_ in their order.
  bool shares_batch_buffers(const std::vector<HipAttention*>& hips) const;
  // Makes batch_ for `hips` unless they share it already; each adopts its slice.
  void share_batch_buffers(const std::vector<HipAttention*>& hips, int64_t heads, const c10::Device& device);
  // This backend's rows and counts_by_extra become slice `slot` of `batch`, their contents copied
  // there and every valid cached mask pointed at them (no mask is forgotten).
  void adopt_batch_buffers(const BatchDecodeBuffers& batch, int64_t slot);
  void ensure_decode_buffers(int64_t heads, const c10::Device& device);
  // Whether the CUDA kernels serve this backend's sparse layers and nothing needs per-call host work.
  bool graphable(const c10::Device& device);
  // Tail blocks a cached mask can need: the tail start moves one block every b_k positions, and a
  // mask serves at most r_m steps.
  int64_t tail_room() const { return params_.refresh_every / params_.hip.b_k + 2; }
  // Whether a layer's next decode step estimates a new mask (the first after a prefill, or r_m steps on).
  bool needs_refresh(const LayerState& state) const;
  // Whether this call's layer is one HiP replaces (hip_replaces_layer, from the call's math).
  bool replaces(const AttentionCall& call) const;
  // A refresh's bookkeeping at `position` (eager or inside a graph): the tail start, the layer's
  // slices of the shared rows and counts (which the refresh then fills), and a fresh step count.
  void note_refresh(LayerState& state, int64_t layer, int64_t position);
  // Tail blocks the query at `position` has moved past since the layer's refresh (its count row).
  int64_t cached_extra(const LayerState& state, int64_t position) const;
  // HiP's parameters widened to hold a cached row's tail blocks (the attention launch's k).
  hip::HipParams widened_params() const;
  at::Tensor attend_reference(const AttentionCall& call, LayerState& state, HipLayerEvent& event);
  at::Tensor attend_cuda(const AttentionCall& call, LayerState& state, HipLayerEvent& event);
  // A CUDA decode refresh of call's layer: the search, its rows laid out in the shared buffers and
  // the bookkeeping (note_refresh); returns the search's mask.
  hip_torch::MaskTensors refresh_cuda(const AttentionCall& call, LayerState& state);
  // Key blocks in a CUDA mask row before its tail: HiP's k / b_k, plus, for a method choosing blocks
  // of b > b_k tokens (Quest's pages), the b / b_k - 1 blocks between its dense_from and HiP's,
  // written as selected blocks (method_masks_cuda). mask_params(): HipParams with that k.
  int64_t mask_kb() const { return hip::hip_kb(params_.hip) + method_gap_; }
  hip::HipParams mask_params() const;
  // Whether the CUDA kernels attend this backend's sparse layers (and, for a non-HiP method, its
  // tensor implementation selects).
  bool method_on_cuda();
  // A non-HiP method's mask of the call's rows on the device (its tensor implementation), in the
  // search's form (iterations and branches 0), mask_kb() wide; a prefill call keeps the method's
  // prompt state.
  // `own_blocks` (when given) gets the method's own blocks, before the gap blocks of mask_kb.
  hip_torch::MaskTensors method_masks_cuda(const AttentionCall& call, LayerState& state, at::Tensor* own_blocks = nullptr);
  void record_access(const hip::AttentionInputs& view, const hip::MaskResult& mask,
                     const std::vector<hip::MaskTrace>& traces, HipLayerEvent& event);
  HipModelParams params_;
  const hip::methods::SelectionMethod* method_ = nullptr;  // params_.method's registry entry
  int64_t method_gap_ = 0;                                  // see mask_kb
  std::vector<LayerState> layers_;
  DenseAttention dense_;
  std::function<void(const HipLayerEvent&)> observer_;
  PhaseProfile profile_;
  bool record_access_ = false;
  bool sync_timing_ = false;
  int cuda_ready_ = -1;  // -1 unknown, 0 no (reason in backend_note_), 1 yes
  bool cuda_ready();     // decides cuda_ready_ and backend_note_ once
  DecodeBuffers buffers_;
  std::shared_ptr<BatchDecodeBuffers> batch_;
  std::string backend_note_;
};

}  // namespace hipstudio
