// The views layer's one rule per view (engine/views/): the locality view against a brute-force
// float64 computation of the rule as docs/ANALYSIS.md states it, its rule note for captures pooled
// otherwise, and the trace view's oracle selection against the oracle's masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/views/locality_view.h"
#include "engine/views/trace_view.h"
#include "kernels/oracle.h"
#include "kernels/search_range.h"

namespace hipstudio {
namespace {

struct RandomLayer {
  std::vector<float> q, k;
  hip::AttentionInputs in;
  RandomLayer(int64_t tokens, int64_t d, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    q.resize(static_cast<size_t>(2 * tokens * d));
    k.resize(static_cast<size_t>(tokens * d));
    for (float& x : q) x = n(rng);
    std::vector<float> walk(static_cast<size_t>(d), 0.0f);  // slowly drifting keys: scores with locality
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < d; ++c) k[static_cast<size_t>(t * d + c)] = (walk[static_cast<size_t>(c)] += 0.3f * n(rng));
    in.q = q.data(), in.k = k.data(), in.v = k.data();
    in.hq = 2, in.hkv = 1, in.tq = tokens, in.tk = tokens, in.d = d;
  }
};

// The rule written out plainly: rows, Deltas, every difference, its statistics and bins.
TEST(LocalityView, EqualsABruteForceFloat64ComputationOfTheRule) {
  for (const int64_t tokens : {2, 7, 50, 300}) {
    const RandomLayer layer(tokens, 8, static_cast<uint64_t>(tokens));
    const int64_t shown = 11, bins = 17, head = 1;
    const LocalityView v = reference_locality_view(layer.in, hip::HipParams{}, 3, head, shown, bins);
    SCOPED_TRACE("T = " + std::to_string(tokens));
    // Rows: n = min(64, T - T/2) spread over the second half.
    std::vector<int64_t> rows;
    const int64_t first = tokens / 2, n = std::min<int64_t>(64, tokens - first);
    for (int64_t i = 0; i < n; ++i) rows.push_back(first + i * (tokens - first) / n);
    EXPECT_EQ(v.queries, static_cast<int64_t>(rows.size()));
    // Deltas: 1..8, then x5/4 rounded down, plus the shown one, up to the last row's position.
    std::vector<int64_t> deltas;
    for (int64_t d = 1; d <= rows.back(); d = d < 8 ? d + 1 : d * 5 / 4) deltas.push_back(d);
    if (shown <= rows.back() && std::find(deltas.begin(), deltas.end(), shown) == deltas.end()) deltas.push_back(shown);
    std::sort(deltas.begin(), deltas.end());
    std::vector<int64_t> got;
    for (const hip::DeltaStats& d : v.curve) got.push_back(d.delta);
    EXPECT_EQ(got, deltas);  // every pooled Delta has pairs: the curve holds them all
    for (const hip::DeltaStats& st : v.curve) {
      std::vector<double> x;
      for (int64_t r : rows) {
        std::vector<double> s;
        for (int64_t j = 0; j <= r; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < 8; ++c)
            dot += static_cast<double>(layer.q[static_cast<size_t>((head * tokens + r) * 8 + c)]) * layer.k[static_cast<size_t>(j * 8 + c)];
          s.push_back(dot);
        }
        for (size_t j = 0; j + static_cast<size_t>(st.delta) < s.size(); ++j) x.push_back(s[j + static_cast<size_t>(st.delta)] - s[j]);
      }
      ASSERT_EQ(st.pairs, static_cast<int64_t>(x.size())) << st.delta;
      double mean = 0;
      for (double e : x) mean += e;
      mean /= static_cast<double>(x.size());
      double var = 0;
      for (double e : x) var += (e - mean) * (e - mean);
      EXPECT_NEAR(st.mean, mean, 1e-9 * (1 + std::abs(mean)));
      EXPECT_NEAR(st.stddev, std::sqrt(var / static_cast<double>(x.size())), 1e-9);
      double lo = *std::min_element(x.begin(), x.end()), hi = *std::max_element(x.begin(), x.end());
      if (lo == hi) lo -= 0.5, hi += 0.5;
      std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
      for (double e : x) counts[static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(std::floor((e - lo) / (hi - lo) * bins)), 0, bins - 1))]++;
      EXPECT_EQ(st.counts, counts) << st.delta;
    }
    // The histogram is the shown Delta's where a row reaches it, with its fitted normal.
    if (shown <= rows.back()) {
      EXPECT_EQ(v.histogram.delta, shown);
      EXPECT_GT(v.histogram.pairs, 0);
      double sum = 0;
      for (double f : v.fitted) sum += f;
      EXPECT_NEAR(sum, static_cast<double>(v.histogram.pairs), 1e-6 * static_cast<double>(v.histogram.pairs));
    } else {
      EXPECT_EQ(v.histogram.pairs, 0);
      EXPECT_EQ(v.histogram.counts.size(), static_cast<size_t>(bins));
    }
    EXPECT_EQ(v.rule_note, "");
  }
}

TEST(LocalityView, FittedNormalSumsToPairsAndPeaksAtTheMean) {
  hip::DeltaStats s;
  s.pairs = 1000;
  s.mean = 0.2;
  s.stddev = 1.5;
  s.hist_lo = -4;
  s.hist_hi = 5;
  s.counts.assign(30, 0);
  const std::vector<double> f = locality_fitted_counts(s);
  double sum = 0;
  for (double v : f) sum += v;
  EXPECT_NEAR(sum, 1000.0, 1e-6);
  EXPECT_GT(f[15], f[0]);
  s.stddev = 0;
  EXPECT_EQ(locality_fitted_counts(s), std::vector<double>(30, 0.0));
}

// The rule's own rows and Deltas (shown Deltas added) carry no note; any other pooling says what it
// pooled, so an older capture's figure is labelled.
TEST(LocalityView, RuleNoteNamesAnotherRuleOnly) {
  const int64_t tokens = 200;
  const hip::LocalitySample rule = locality_view_sample(tokens, 40, {5, 77});
  EXPECT_EQ(locality_rule_note(rule.rows, rule.params.deltas, tokens), "");
  std::vector<int64_t> last8;
  for (int64_t i = tokens - 8; i < tokens; ++i) last8.push_back(i);
  const std::string note = locality_rule_note(last8, {1, 2, 4, 8, 16, 32, 64}, tokens);
  EXPECT_NE(note.find("the last 8 rows"), std::string::npos) << note;
  EXPECT_NE(note.find("Delta 1, 2, 4, ..., 64"), std::string::npos) << note;
  EXPECT_NE(note.find("not the on-screen rule"), std::string::npos) << note;
  // The rule's rows with a sweep that stops early is another rule too.
  std::vector<int64_t> short_sweep(rule.params.deltas.begin(), rule.params.deltas.begin() + 3);
  EXPECT_NE(locality_rule_note(rule.rows, short_sweep, tokens), "");
}

// The trace view's oracle blocks (top Kb of the block's scores) are the oracle's mask rows: one rule
// whichever of the two a caller holds.
TEST(TraceView, OracleSelectionIsTheOracleMasksRow) {
  const RandomLayer layer(160, 8, 9);
  hip::HipParams p;
  p.k = 16, p.b_q = 8, p.b_k = 2, p.sink = 2, p.window = 8;
  const hip::MaskResult oracle = hip::oracle_masks(layer.in, p, 1);
  for (int64_t head = 0; head < 2; ++head)
    for (int64_t qb = 0; qb < oracle.query_blocks; ++qb) {
      const BlockTraceView v = reference_trace_view(layer.in, p, 0, head, qb);
      const int32_t* row = oracle.row(head, qb);
      EXPECT_EQ(v.oracle_blocks, std::vector<int32_t>(row, row + oracle.count(head, qb))) << head << " " << qb;
      EXPECT_EQ(v.oracle_scores.size(), static_cast<size_t>(v.trace.hi - v.trace.lo));
    }
  // Ties go to the smaller block; all blocks when there are at most Kb.
  EXPECT_EQ(oracle_selection_of_scores({1, 3, 3, 2}, 10, 2), (std::vector<int32_t>{11, 12}));
  EXPECT_EQ(oracle_selection_of_scores({5, 5, 5}, 0, 2), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(oracle_selection_of_scores({1, 2}, 4, 8), (std::vector<int32_t>{4, 5}));
}

}  // namespace
}  // namespace hipstudio
