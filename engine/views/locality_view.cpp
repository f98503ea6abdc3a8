#include "engine/views/locality_view.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hipstudio {
namespace {

// "1, 2, 4" for up to six values, else the first three, "...", the last.
std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v.size() > 6 && i == 3) {
      s += ", ...";
      i = v.size() - 1;
    }
    s += (s.empty() ? "" : ", ") + std::to_string(v[i]);
  }
  return s;
}

std::string rows_text(const std::vector<int64_t>& q, int64_t tokens) {
  if (q.empty()) return "no rows";
  const bool contiguous = q.back() - q.front() + 1 == static_cast<int64_t>(q.size());
  const std::string n = std::to_string(q.size()) + (q.size() == 1 ? " row" : " rows");
  if (contiguous && q.back() == tokens - 1) return "the last " + n;
  return n + " from " + std::to_string(q.front()) + " to " + std::to_string(q.back());
}

}  // namespace

hip::LocalitySample locality_view_sample(int64_t tokens, int64_t bins, const std::vector<int64_t>& shown_deltas) {
  std::vector<int64_t> shown;
  for (int64_t d : shown_deltas) shown.push_back(std::max<int64_t>(1, d));
  return hip::locality_sample(tokens, bins, shown);
}

std::vector<double> locality_fitted_counts(const hip::DeltaStats& s) {
  const size_t bins = s.counts.size();
  std::vector<double> out(bins, 0.0);
  if (bins == 0 || !(s.stddev > 0) || s.pairs <= 0) return out;
  auto cdf = [&](double x) { return 0.5 * std::erfc(-(x - s.mean) / (s.stddev * std::sqrt(2.0))); };
  const double width = (s.hist_hi - s.hist_lo) / static_cast<double>(bins);
  double total = 0;
  for (size_t b = 0; b < bins; ++b) {
    const double a = s.hist_lo + width * static_cast<double>(b);
    out[b] = cdf(a + width) - cdf(a);
    total += out[b];
  }
  for (double& v : out) v = total > 0 ? v / total * static_cast<double>(s.pairs) : 0.0;
  return out;
}

LocalityView locality_view_of(const hip::ScoreLocality& stats, int64_t layer, int64_t delta, int64_t bins,
                              const std::string& source, const std::string& rule_note) {
  LocalityView v;
  v.layer = layer;
  v.head = stats.head;
  v.delta = std::max<int64_t>(1, delta);
  // A Delta no row reaches has no pairs: an empty histogram, as score_locality states such a Delta.
  v.histogram.delta = v.delta;
  v.histogram.counts.assign(static_cast<size_t>(std::max<int64_t>(1, bins)), 0);
  v.histogram.mean = v.histogram.stddev = v.histogram.kl_to_normal = std::numeric_limits<double>::quiet_NaN();
  for (const hip::DeltaStats& d : stats.deltas) {
    if (d.delta == v.delta) v.histogram = d;
    if (d.pairs > 0) v.curve.push_back(d);
  }
  std::sort(v.curve.begin(), v.curve.end(), [](const hip::DeltaStats& a, const hip::DeltaStats& b) { return a.delta < b.delta; });
  v.fitted = locality_fitted_counts(v.histogram);
  v.queries = static_cast<int64_t>(stats.queries.size());
  v.source = source;
  v.rule_note = rule_note;
  return v;
}

LocalityView reference_locality_view(const hip::AttentionInputs& in, const hip::HipParams& p, int64_t layer, int64_t head,
                                     int64_t delta, int64_t bins) {
  const hip::LocalitySample sample = locality_view_sample(in.tq, bins, {delta});
  return locality_view_of(hip::score_locality(in, p, head, sample.rows, sample.params), layer, delta, bins,
                          "float64 CPU reference");
}

std::string locality_rule_note(const std::vector<int64_t>& queries, const std::vector<int64_t>& deltas, int64_t tokens) {
  const hip::LocalitySample rule = hip::locality_sample(tokens, 1);
  const int64_t last = rule.rows.empty() ? 0 : rule.rows.back();
  std::vector<int64_t> held = deltas;
  std::sort(held.begin(), held.end());
  const bool sweep = std::includes(held.begin(), held.end(), rule.params.deltas.begin(), rule.params.deltas.end());
  // Deltas beyond the sweep are shown Deltas: the rule adds those a row reaches.
  const bool shown = std::all_of(held.begin(), held.end(), [&](int64_t d) { return d >= 1 && d <= last; });
  if (queries == rule.rows && sweep && shown) return "";
  return rows_text(queries, tokens) + ", Delta " + list_text(held) + " (not the on-screen rule)";
}

}  // namespace hipstudio
