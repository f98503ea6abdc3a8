#pragma once
// The score-locality view (paper section 4, appendix A.3), one rule for every caller: the GUI's
// Score locality panel (on the CPU or the device), `capture`, the report's and `export`'s figures.
// What it pools and shows:
//   rows and Deltas: hip::locality_sample (kernels/score_locality.h): up to 64 rows of the prompt's
//     second half, Delta 1..8 then x5/4, plus the Delta whose histogram is shown;
//   numbers: hip::score_locality, the float64 reference (the device's are checked against it);
//   view: the histogram at the shown Delta with its fitted normal, and the mean / std curve over
//     the Deltas that have pairs.
// A capture keeps the rows and Deltas it was written with; locality_rule_note says, in words, how
// they differ from this rule, so a figure of an older capture is labelled with what it shows.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/score_locality.h"

namespace hipstudio {

struct LocalityView {
  int64_t layer = 0, head = 0;
  int64_t delta = 0;                   // the histogram's Delta
  hip::DeltaStats histogram;           // at `delta`; no pairs (NaN numbers) where no row reaches it
  std::vector<double> fitted;          // (bins) the fitted normal's expected pairs per bin
  std::vector<hip::DeltaStats> curve;  // mean / std against Delta: the pooled Deltas with pairs, ascending
  int64_t queries = 0;                 // query rows pooled
  std::string source;                  // where the scores came from: the device or the CPU reference
  std::string rule_note;               // "" under this rule, else what was pooled (locality_rule_note)
};

// The rows and Deltas of a `tokens`-token prompt with histograms at `shown_deltas` (each clamped to
// >= 1), `bins` bins: hip::locality_sample's rule.
hip::LocalitySample locality_view_sample(int64_t tokens, int64_t bins, const std::vector<int64_t>& shown_deltas);

// The view from statistics pooled elsewhere (the device, a capture's stored arrays): the histogram
// at `delta` where `stats` holds it, else an empty one of `bins` bins.
LocalityView locality_view_of(const hip::ScoreLocality& stats, int64_t layer, int64_t delta, int64_t bins,
                              const std::string& source, const std::string& rule_note = "");

// The float64 CPU reference: the sample of in.tq tokens, pooled by hip::score_locality (only
// p.causal is read).
LocalityView reference_locality_view(const hip::AttentionInputs& in, const hip::HipParams& p, int64_t layer, int64_t head,
                                     int64_t delta, int64_t bins);

// Expected pairs per histogram bin under the fitted normal N(mean, stddev^2), renormalised to the
// histogram range (what DeltaStats::kl_to_normal compares against) and scaled to the pairs; zeros
// without pairs or spread.
std::vector<double> locality_fitted_counts(const hip::DeltaStats& stats);

// "" when `queries` are the rule's rows for a `tokens`-token prompt and `deltas` hold its sweep
// (shown Deltas added are the rule's too); else what was pooled, such as "the last 8 rows, Delta
// 1, 2, 4, ..., 32 (not the on-screen rule)", for a figure's caption.
std::string locality_rule_note(const std::vector<int64_t>& queries, const std::vector<int64_t>& deltas, int64_t tokens);

}  // namespace hipstudio
