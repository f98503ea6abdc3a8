#pragma once
// The paired run: one prompt through the dense model and through the HiP model (same weights, same
// tokens), then greedy decoding on both sides, with every number the GUI, `hipstudio analyze` and
// the captures show. Results are plain data (no tensors) so views and exporters can read them.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/hip_attention.h"
#include "engine/model/model.h"
#include "engine/offload/access_streams.h"

namespace hipstudio {

struct AnalysisOptions {
  HipModelParams hip;
  int64_t decode_steps = 0;        // greedy decode steps after the prompt
  bool force_dense_tokens = true;  // the HiP side consumes the dense side's tokens (aligned steps)
  int64_t context_limit = 0;       // 0 = the model's max_seq_len
  uint64_t random_seed = 1;        // random-baseline masks
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
};

// progress(fraction in [0, 1], what) is called between phases; returning false cancels (the call
// then throws AnalysisCancelled).
using AnalysisProgress = std::function<bool(double fraction, const std::string& what)>;

struct AnalysisCancelled : std::exception {
  const char* what() const noexcept override { return "analysis cancelled"; }
};

PairedAnalysis run_paired_analysis(std::shared_ptr<const Model> model, const std::string& prompt,
                                   const AnalysisOptions& options, const AnalysisProgress& progress = {});

// Quality of one layer from its post-RoPE Q [n_heads, T, d] and K, V [n_kv_heads, T, d] (any device
// and dtype; float32 copies are made): what HiP, the oracle and the random baseline select.
LayerQuality layer_quality(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const hip::HipParams& params,
                           uint64_t random_seed);

}  // namespace hipstudio
