#pragma once
// Internal to captures/: how the parts of a Capture map onto manifest fields and array names, shared
// by the writer and the reader so the two cannot drift. Array names (without ".npy"), shapes with
// L layers, H query heads, G kv heads, T prompt tokens, D head dim, QB = ceil(T / b_q), Kb = k / b_k,
// S decode records, Lh = HiP layers of the access streams, Sa = their steps, B = locality bins:
// Format 3 (keyed by method; <m> is a method's registry name, the manifest's "methods" list in order):
//   analysis/prompt_ids, analysis/dense/*, analysis/layers, layer_math, decode, access/*: as below
//   analysis/dense/scalars f64 (2): mean_nll, ppl
//   methods/<m>/scalars f64 (4): kMethodScalarColumns     methods/<m>/nll f64 (T-1), generated i32 (n)
//   methods/<m>/latency_prefill_layers, latency_decode_layers, latency_totals: as analysis/hip/'s
//   methods/<m>/quality f64 (L, H, 6): kQualityColumns
//   masks/L<l>/<m>/{blocks,counts}: the method's mask, oracle_{blocks,counts}, random_{blocks,counts}:
//     the baselines on the method's side, dense_from i64 (QB), recall, random_recall f64 (H, QB);
//     iterations i32, branches i64 (H, QB) for HiP's search (method "hip")
// Formats 1 and 2 (one side, positional: analysis/scalars, analysis/hip/*, analysis/quality and the
// masks/L<l>/ names below), and the arrays every format shares:
//   analysis/prompt_ids i32 (T)            analysis/scalars f64 (6): dense mean_nll, ppl, hip mean_nll, ppl, kl, top1
//   analysis/{dense,hip}/nll f64 (T-1)     analysis/{dense,hip}/generated i32 (n)
//   analysis/{dense,hip}/latency_prefill_layers, latency_decode_layers f64 (L, 4): mask, sparse, dense, other ms
//   analysis/{dense,hip}/latency_totals f64 (2, 4): prefill, mean decode step
//   analysis/layers i64 (L, 2): layer, dense     analysis/quality f64 (L, H, 6): HeadQuality fields in order
//   analysis/layer_math f64 (L, 3): window, scale, soft-cap of each layer (LayerQuality::math; 0 = none)
//   analysis/decode i64 (S, 7): step, position, dense_token, hip_token, refreshed, mask/sparse tokens accessed
//   access/{mask,sparse}_offsets i64 (Sa*Lh*H + 1), access/{mask,sparse}_keys i32 (n): ragged key lists,
//     over the layers HiP replaces: the manifest's access.hip_layers (ascending), else first_layer on
//   inputs/L<l>/q f32 (H, T, D), k, v f32 (G, T, D)
//   masks/L<l>/{hip,oracle,random}_blocks i32 (H, QB, Kb), *_counts i32 (H, QB), dense_from i64 (QB),
//     hip_iterations i32 (H, QB), hip_branches i64 (H, QB), recall, random_recall f64 (H, QB)
//   traces/<i>/header i64 (9): layer, head, query_block, row_begin, row_end, p0, lo, hi, dense_from
//   traces/<i>/initial i32 (2, n), blocks i32 (n), branches i32 (nb, 5): iteration, begin, end, repr, kept;
//     scores f64 (nb); oracle_scores f64 (hi - lo), optional (older captures lack it)
//   locality/queries i64 (q), locality/L<l>/stats f64 (H, nd, 7): delta, pairs, mean, std, lo, hi, kl;
//     locality/L<l>/counts i64 (H, nd, B)
//   offload/{mask,sparse}/per_step i64 (Lh, H, Sa, 6): accesses hits misses bytes evictions probes;
//     per_head (Lh, H, 6), per_layer (Lh, 6), per_step_total (Sa, 6), total (6), map i32 (Sa, T') or (0, 0)
#include <array>
#include <string>

#include "engine/analysis/hip_model_params.h"

// Token text in the manifest (optional; CaptureInfo's pieces): "prompt": {"pieces": [one string per
// prompt id]} and "decode_pieces": {"dense": [...], "hip": [...]} (one string per decode record).

namespace hipstudio::captures::layout {

inline constexpr const char* kPromptPieces = "pieces";          // under "prompt"
inline constexpr const char* kDecodePieces = "decode_pieces";   // {"dense", "hip"}

inline std::string layer_array(const char* group, int64_t layer, const char* name) {
  return std::string(group) + "/L" + std::to_string(layer) + "/" + name;
}
inline std::string trace_array(size_t index, const char* name) {
  return "traces/" + std::to_string(index) + "/" + name;
}
// Format 3: method `m`'s side arrays and its masks of layer `layer`.
inline std::string method_array(const std::string& m, const char* name) { return "methods/" + m + "/" + name; }
inline std::string method_mask_array(int64_t layer, const std::string& m, const char* name) {
  return "masks/L" + std::to_string(layer) + "/" + m + "/" + name;
}

// The manifest's "methods" list: [{"name", "values": {parameter: value}, "mask_refreshes", "summary"}]
// (summary: method_summary_json, what `open --print` shows without reading an array), and
// "method_columns": {"scalars": kMethodScalarColumns, "quality": kQualityColumns}.
inline constexpr const char* kMethods = "methods";
inline constexpr const char* kMethodColumns = "method_columns";
inline constexpr std::array<const char*, 4> kMethodScalarColumns{"mean_nll", "ppl", "kl", "top1_agreement"};
// HeadQuality's fields in order: the method's mask, then the random baseline on the same side.
inline constexpr std::array<const char*, 6> kQualityColumns{"recall", "random_recall", "mass", "random_mass",
                                                            "out_rel_err", "random_out_rel_err"};

// params.selection_seed: random's seed (its one value), 1 for any other method.
inline uint64_t selection_seed(const hip::methods::MethodChoice& m) {
  return m.name == "random" ? static_cast<uint64_t>(hip::methods::method_int(m.values, "random_seed")) : 1;
}

}  // namespace hipstudio::captures::layout
