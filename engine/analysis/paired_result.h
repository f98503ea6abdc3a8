#pragma once
// What a paired (dense vs HiP) run produces: plain data with shapes in comments, no tensors, so the
// GUI, the JSON/CSV exporters and the capture files read it without LibTorch.
#include <cstdint>
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
  // Layers whose prompt Q/K/V (PairedAnalysis::inputs) and masks (PairedAnalysis::masks) the run
  // keeps on the host: every layer by default (the GUI computes any layer's views from them);
  // `analyze` keeps none, `capture` those --inputs-layers names.
  bool keep_all_layers = true;
  std::vector<int64_t> keep_layers;  // when !keep_all_layers
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
  bool dense = false;              // layer < l_d: the model runs it dense; the numbers say what HiP would do
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

// One layer's post-RoPE attention inputs on the HiP side over the prompt, float32 C order: what
// on-demand views (masks, traces, score locality of any head) are computed from.
struct LayerInputs {
  int64_t layer = 0;
  int64_t heads = 0, kv_heads = 0, tokens = 0, dim = 0;
  std::vector<float> q;  // (heads, tokens, dim)
  std::vector<float> k;  // (kv_heads, tokens, dim)
  std::vector<float> v;  // (kv_heads, tokens, dim)
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
