#include "kernels/score_locality.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/dot_f64.h"

namespace hipstudio::hip {
namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

LocalitySample locality_sample(int64_t tokens, int64_t bins, const std::vector<int64_t>& shown) {
  LocalitySample s;
  s.params.bins = bins;
  const int64_t first = tokens / 2, n = std::min<int64_t>(64, tokens - first);
  for (int64_t i = 0; i < n; ++i) s.rows.push_back(first + i * (tokens - first) / n);
  const int64_t last = s.rows.empty() ? 0 : s.rows.back();
  std::vector<int64_t>& deltas = s.params.deltas;
  for (int64_t d = 1; d <= last; d = d < 8 ? d + 1 : d * 5 / 4) deltas.push_back(d);
  for (int64_t d : shown)
    if (d >= 1 && d <= last) deltas.push_back(d);
  std::sort(deltas.begin(), deltas.end());
  deltas.erase(std::unique(deltas.begin(), deltas.end()), deltas.end());
  return s;
}

void validate_locality_params(const LocalityParams& lp) {
  if (lp.bins < 1) throw HipParamError("histogram bins (" + std::to_string(lp.bins) + ") must be >= 1");
  for (int64_t delta : lp.deltas) {
    if (delta < 1) throw HipParamError("Delta (" + std::to_string(delta) + ") must be >= 1");
  }
}

double kl_histogram_vs_normal(const DeltaStats& st) {
  if (st.pairs == 0) return std::numeric_limits<double>::quiet_NaN();
  if (st.stddev == 0) return 0.0;
  const int64_t bins = static_cast<int64_t>(st.counts.size());
  const double width = (st.hist_hi - st.hist_lo) / static_cast<double>(bins);
  std::vector<double> q(static_cast<size_t>(bins));
  double q_total = 0;
  for (int64_t b = 0; b < bins; ++b) {
    const double a = st.hist_lo + width * static_cast<double>(b);
    const double c = b + 1 == bins ? st.hist_hi : a + width;
    q[b] = normal_cdf((c - st.mean) / st.stddev) - normal_cdf((a - st.mean) / st.stddev);
    q_total += q[b];
  }
  double kl = 0;
  for (int64_t b = 0; b < bins; ++b) {
    if (st.counts[b] == 0) continue;
    const double pb = static_cast<double>(st.counts[b]) / static_cast<double>(st.pairs);
    const double qb = std::max(q[b] / q_total, 1e-300);
    kl += pb * std::log(pb / qb);
  }
  return kl;
}

DeltaStats delta_stats_of_pass1(int64_t delta, int64_t pairs, double sum, double min, double max, int64_t bins) {
  DeltaStats st;
  st.delta = delta;
  st.pairs = pairs;
  st.counts.assign(static_cast<size_t>(bins), 0);
  if (pairs == 0) {
    st.mean = st.stddev = st.kl_to_normal = std::numeric_limits<double>::quiet_NaN();
    return st;
  }
  st.mean = sum / static_cast<double>(pairs);
  if (min == max) {
    min -= 0.5;
    max += 0.5;
  }
  st.hist_lo = min;
  st.hist_hi = max;
  return st;
}

void finish_delta_stats(DeltaStats& st, double squared_deviations) {
  st.stddev = std::sqrt(squared_deviations / static_cast<double>(st.pairs));
  st.kl_to_normal = kl_histogram_vs_normal(st);
}

ScoreLocality score_locality(const AttentionInputs& in, const HipParams& p, int64_t head,
                             const std::vector<int64_t>& queries, const LocalityParams& lp) {
  validate_attention_inputs(in, false);
  if (head < 0 || head >= in.hq) {
    throw AttentionInputError("head " + std::to_string(head) + " is outside the " + std::to_string(in.hq) +
                              " query heads");
  }
  validate_locality_params(lp);
  // Scores of every query over its visible keys.
  const int64_t g = kv_head(in, head);
  std::vector<std::vector<double>> scores;
  scores.reserve(queries.size());
  for (int64_t i : queries) {
    if (i < 0 || i >= in.tq) {
      throw AttentionInputError("query " + std::to_string(i) + " is outside the " + std::to_string(in.tq) +
                                " queries");
    }
    const int64_t e = visible_end(in, p, i);
    std::vector<double> s(static_cast<size_t>(e + 1));
    for (int64_t j = 0; j <= e; ++j) s[j] = dot_f64(q_row(in, head, i), k_row(in, g, j), in.d);
    scores.push_back(std::move(s));
  }
  return score_locality_of_scores(scores, head, queries, lp);
}

ScoreLocality score_locality_of_scores(const std::vector<std::vector<double>>& scores, int64_t head,
                                       const std::vector<int64_t>& queries, const LocalityParams& lp) {
  validate_locality_params(lp);
  if (scores.size() != queries.size()) throw AttentionInputError("one score row per query expected");
  ScoreLocality out;
  out.head = head;
  out.queries = queries;
  for (int64_t delta : lp.deltas) {
    // Pass 1: count, sum, range. Pass 2: variance about the mean (stable) and the histogram.
    int64_t pairs = 0;
    double sum = 0, lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& s : scores) {
      for (size_t j = 0; j + static_cast<size_t>(delta) < s.size(); ++j) {
        const double x = s[j + delta] - s[j];
        sum += x;
        lo = std::min(lo, x);
        hi = std::max(hi, x);
        ++pairs;
      }
    }
    DeltaStats st = delta_stats_of_pass1(delta, pairs, sum, lo, hi, lp.bins);
    if (pairs > 0) {
      const double scale = histogram_scale(st);
      double sq = 0;
      for (const auto& s : scores) {
        for (size_t j = 0; j + static_cast<size_t>(delta) < s.size(); ++j) {
          const double x = s[j + delta] - s[j];
          sq += (x - st.mean) * (x - st.mean);
          const double b = std::floor((x - st.hist_lo) * scale);
          st.counts[static_cast<size_t>(std::clamp<double>(b, 0.0, static_cast<double>(lp.bins - 1)))] += 1;
        }
      }
      finish_delta_stats(st, sq);
    }
    out.deltas.push_back(std::move(st));
  }
  return out;
}

}  // namespace hipstudio::hip
