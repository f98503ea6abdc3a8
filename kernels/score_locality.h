#pragma once
// Score locality (paper section 4, appendix A.3): for one head and a set of queries, the
// distribution of delta = s_{j + Delta} - s_j over key pairs Delta apart, where s_j = dot(q, k_j)
// (raw scores, as the paper's s = K q) over the query's visible keys [0, e]. The paper models
// delta ~ N(0, sigma(Delta)^2) with sigma increasing in Delta; this measures how true that is.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"

namespace hipstudio::hip {

struct LocalityParams {
  std::vector<int64_t> deltas;  // distances Delta >= 1, in the order the results should have
  int64_t bins = 50;            // histogram bins per Delta (>= 1)
};

struct DeltaStats {
  int64_t delta = 0;
  int64_t pairs = 0;             // key pairs pooled over the queries
  double mean = 0, stddev = 0;   // of delta (population standard deviation)
  double hist_lo = 0, hist_hi = 0;  // histogram range: the observed [min, max] (widened by 0.5 if equal)
  std::vector<int64_t> counts;   // (bins) equal-width bins over [hist_lo, hist_hi]
  // KL(histogram || fitted normal N(mean, stddev^2)) with both as distributions over the bins (the
  // normal's bin probabilities renormalised to the range): the paper's appendix A.3 test, where
  // almost all values are < 0.1. 0 when stddev is 0; NaN when there are no pairs.
  double kl_to_normal = 0;
};

struct ScoreLocality {
  int64_t head = 0;
  std::vector<int64_t> queries;     // query rows used
  std::vector<DeltaStats> deltas;   // one per LocalityParams::deltas entry
};

// Keeps all scores of the given queries in memory: O(queries x tk) doubles. Only p.causal is read.
// Throws AttentionInputError for a head or query outside the inputs, HipParamError for Delta < 1
// or bins < 1.
ScoreLocality score_locality(const AttentionInputs& in, const HipParams& p, int64_t head,
                             const std::vector<int64_t>& queries, const LocalityParams& lp);

// The query rows and Deltas every locality view pools (docs/ANALYSIS.md, "Score locality"): the
// GUI's panel, on the CPU or on the device, and captures, so that an exported figure is the one on
// screen. For a T-token prompt:
//   rows: n = min(64, T - T/2) rows spread over the prompt's second half (they see the most keys),
//         row i = T/2 + i (T - T/2) / n;
//   deltas: 1, 2, ..., 8, then each times 5/4 (rounded down), a geometric sweep for the mean / std
//         curve, with `shown` (the Delta a histogram shows) added; only those the last row has a
//         pair for (Delta <= its position), ascending, once each.
struct LocalitySample {
  std::vector<int64_t> rows;  // ascending query rows
  LocalityParams params;      // deltas as above, `bins` bins
};
LocalitySample locality_sample(int64_t tokens, int64_t bins, const std::vector<int64_t>& shown = {});

// Throws HipParamError for bins < 1 or a Delta < 1 (every implementation checks the same rules).
void validate_locality_params(const LocalityParams& lp);

// The statistics' two passes, stated once for every implementation (the float64 reference below,
// the device's in engine/analysis/device_locality.h):
//  pass 1 gives the pair count, the sum and the [min, max] of the differences: delta_stats_of_pass1
//    sets pairs, mean = sum / pairs, the histogram range [min, max] (widened by 0.5 each way where
//    min == max) and `bins` zero counts; with no pairs, mean, stddev and KL are NaN and it is final;
//  pass 2 bins each difference x at floor((x - hist_lo) * histogram_scale(st)) clamped to
//    [0, bins - 1] (the last bin takes the top) and sums (x - mean)^2; finish_delta_stats sets the
//    stddev from that sum and the KL from the counts.
DeltaStats delta_stats_of_pass1(int64_t delta, int64_t pairs, double sum, double min, double max, int64_t bins);
inline double histogram_scale(const DeltaStats& st) {
  return static_cast<double>(st.counts.size()) / (st.hist_hi - st.hist_lo);
}
void finish_delta_stats(DeltaStats& st, double squared_deviations);

// KL(histogram || fitted normal) of a DeltaStats whose pairs, mean, stddev, range and counts are set:
// the kl_to_normal rule above, for statistics computed elsewhere (the GUI's device path).
double kl_histogram_vs_normal(const DeltaStats& st);

// The same statistics from score rows computed elsewhere: scores[i] holds
// dot(q, k_j) of queries[i] over its visible keys [0, e], as score_locality computes them.
ScoreLocality score_locality_of_scores(const std::vector<std::vector<double>>& scores, int64_t head,
                                       const std::vector<int64_t>& queries, const LocalityParams& lp);

}  // namespace hipstudio::hip
