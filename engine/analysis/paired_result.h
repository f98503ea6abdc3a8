#pragma once
// What a paired (dense vs HiP) run produces: plain data with shapes in comments, no tensors, so the
// GUI, the JSON/CSV exporters and the capture files read it without LibTorch.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/analysis/hip_model_params.h"
#include "engine/offload/access_streams.h"
#include "engine/views/layer_views.h"

namespace hipstudio {

struct AnalysisOptions {
  HipModelParams hip;
  int64_t decode_steps = 0;        // greedy decode steps after the prompt
  bool force_dense_tokens = true;  // the HiP side consumes the dense side's tokens (aligned steps)
  int64_t context_limit = 0;       // 0 = the model's max_seq_len
  uint64_t random_seed = 1;        // random-baseline masks (layer_random_seed per layer)
  // The random baseline's attention mass and output error in every layer's views (LayerViewsSetup::
  // random_scores); sweeps and method comparisons, which report neither, turn it off.
  bool random_scores = true;
  // Layers whose prompt Q/K/V (PairedAnalysis::inputs) and masks (PairedAnalysis::masks) the run
  // keeps (inputs on the run's device in its dtype, masks on the host): every layer by default (the
  // GUI computes any layer's views from them); `analyze` keeps none, `capture` those
  // --inputs-layers names.
  bool keep_all_layers = true;
  std::vector<int64_t> keep_layers;  // when !keep_all_layers
  // -1: the prefill computes every layer's views (the command line). >= 0: only this layer's; the
  // other kept layers' wait (LayerQuality::pending) for PairedPrefill::layer_views, so the GUI shows
  // the viewed layer after the prefill alone and computes the rest in the background.
  int64_t views_only_layer = -1;
  // With views_only_layer: where keeping every layer's inputs does not fit the device, keep that
  // layer's only (the GUI at 128k tokens); the other layers' views then need a prefill that keeps them.
  bool keep_viewed_if_short = false;
  // With views_only_layer: both prefills stop after that layer and the rest waits for
  // PairedPrefill::finish_hip, so the viewed layer's results come first (the GUI's knob changes).
  bool viewed_layer_first = false;
  bool keeps(int64_t layer) const {
    if (keep_all_layers) return true;
    for (int64_t l : keep_layers)
      if (l == layer) return true;
    return false;
  }
};

// One query head of one layer, over the prompt.
struct HeadQuality {
  double recall = 1.0;            // HiP mask vs exact oracle, mean over query blocks
  double random_recall = 1.0;     // random baseline vs oracle
  double mass = 1.0;              // share of dense attention probability on HiP's keys, mean over queries
  double random_mass = 1.0;
  double out_rel_err = 0.0;       // ||O_hip - O_dense|| / ||O_dense|| (float64 reference on this layer's Q/K/V)
  double random_out_rel_err = 0.0;
};

struct LayerQuality {
  int64_t layer = 0;
  bool dense = false;              // HiP does not replace the layer (one of the first l_d full-attention
                                   // layers, or windowed); the numbers say what HiP would do
  ViewsMath math;                  // the layer's window, scale and soft-cap (windowed: heads' numbers NaN)
  bool pending = false;            // its views wait for PairedPrefill::layer_views (heads empty)
  std::vector<HeadQuality> heads;  // (n_heads)
};

struct ComponentMs {
  double mask = 0, sparse = 0, dense = 0, other = 0;  // milliseconds
  double total() const { return mask + sparse + dense + other; }
};

struct LatencyBreakdown {
  std::vector<ComponentMs> prefill_layers;  // (layers)
  std::vector<ComponentMs> decode_layers;   // (layers) mean per decode step
  ComponentMs prefill;                      // sum over layers
  ComponentMs decode_step;                  // sum over layers, mean per step
};

struct SideResult {
  std::vector<double> nll;          // (prompt tokens - 1) -log p(token i+1 | tokens 0..i)
  double mean_nll = 0, ppl = 0;
  std::vector<int32_t> generated;   // greedy tokens this side produced while decoding
  LatencyBreakdown latency;
};

struct DecodeStepRecord {
  int64_t step = 0;
  int64_t position = 0;             // position of the token fed at this step
  int32_t dense_token = 0;          // greedy choice of the dense side after this step
  int32_t hip_token = 0;            // greedy choice of the HiP side after this step
  bool refreshed = false;           // the HiP layers re-estimated their masks
  int64_t mask_tokens_accessed = 0;    // keys read by mask estimation, summed over HiP layers and heads
  int64_t sparse_tokens_accessed = 0;  // keys read by sparse attention, summed over HiP layers and heads
};

// One layer's post-RoPE attention inputs on the HiP side over the prompt as float32 C order arrays:
// what on-demand views (masks, traces, score locality of any head) are computed from.
struct LayerInputArrays {
  std::vector<float> q;  // (heads, tokens, dim)
  std::vector<float> k;  // (kv_heads, tokens, dim)
  std::vector<float> v;  // (kv_heads, tokens, dim)
};

// Inputs that live somewhere other than host memory: a CUDA run keeps them on its device in the
// run's dtype (engine/analysis/kept_inputs.h), so a long prompt costs the host nothing until a view or
// a capture reads them.
class LayerInputsSource {
 public:
  virtual ~LayerInputsSource() = default;
  virtual LayerInputArrays copy_to_host() const = 0;  // float32
  virtual std::string location() const = 0;           // e.g. "cuda:0 bf16"
  virtual uint64_t bytes() const = 0;                  // what they take where they live
};

// One kept layer's inputs. Either host arrays (a CPU run, a capture read back) or a source whose
// float32 host copy is made once, on first use, and shared by every copy of this value (copies of a
// PairedAnalysis, such as each decode re-run's, never duplicate the arrays).
struct LayerInputs {
  int64_t layer = 0;
  int64_t heads = 0, kv_heads = 0, tokens = 0, dim = 0;

  void set_host(LayerInputArrays arrays) {
    auto store = std::make_shared<Store>();
    std::call_once(store->once, [&] { store->arrays = std::move(arrays); });
    store_ = std::move(store);
  }
  void set_source(std::shared_ptr<const LayerInputsSource> source) {
    auto store = std::make_shared<Store>();
    store->source = std::move(source);
    store_ = std::move(store);
  }
  // The float32 arrays; copied from the source on the first call (thread-safe).
  const LayerInputArrays& host() const {
    Store& s = *store_;
    std::call_once(s.once, [&s] {
      if (s.source) s.arrays = s.source->copy_to_host();
      s.copied.store(true, std::memory_order_release);
    });
    return s.arrays;
  }
  // Where the inputs live when not (only) on the host, or null.
  const LayerInputsSource* source() const { return store_->source.get(); }
  // host() returns at once: the arrays are there (a CPU run, or a device run's copy already made).
  // The GUI's drawing thread asks before it reads them, so it never waits for a copy.
  bool host_ready() const { return !store_->source || store_->copied.load(std::memory_order_acquire); }

 private:
  struct Store {
    std::once_flag once;
    std::atomic<bool> copied{false};
    LayerInputArrays arrays;
    std::shared_ptr<const LayerInputsSource> source;
  };
  std::shared_ptr<Store> store_ = std::make_shared<Store>();
};

struct PairedAnalysis {
  AnalysisOptions options;
  std::vector<int32_t> prompt_ids;  // with BOS
  SideResult dense, hip;
  double kl = 0.0;                  // KL(dense || HiP) of the next-token distribution, mean over prompt positions
  double top1_agreement = 0.0;      // share of prompt positions where both sides' argmax agree
  std::vector<LayerQuality> layers; // (n_layers)
  std::vector<DecodeStepRecord> decode;
  int64_t mask_refreshes = 0;       // decode steps that refreshed the masks
  AccessStreams access;
  std::vector<LayerInputs> inputs;  // (kept layers, ascending) HiP side, prompt only
  std::vector<LayerMaskViews> masks;  // (kept layers, ascending) HiP's, the oracle's and the random masks
  // -1: the HiP side ran every layer. >= 0 (AnalysisOptions::viewed_layer_first): it has run through
  // this layer only, so the layers above have no results yet (pending, no inputs) and the per-token
  // metrics of both sides (nll, ppl, KL, top-1) are not computed yet (empty, 0).
  int64_t hip_through_layer = -1;
  bool hip_partial() const { return hip_through_layer >= 0; }

  // The kept inputs / masks of `layer`, or null when the run did not keep them.
  const LayerInputs* find_inputs(int64_t layer) const {
    for (const LayerInputs& in : inputs)
      if (in.layer == layer) return &in;
    return nullptr;
  }
  const LayerMaskViews* find_masks(int64_t layer) const {
    for (const LayerMaskViews& m : masks)
      if (m.layer == layer) return &m;
    return nullptr;
  }
};

}  // namespace hipstudio
