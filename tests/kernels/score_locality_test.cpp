// Score-locality statistics on scores with a known distribution of differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/score_locality.h"
#include "tests/kernels/hip_test_inputs.h"

namespace hipstudio::hip {
namespace {

using testing::OwnedInputs;

// q = (1, 0): the raw score of key j is exactly k_j[0].
OwnedInputs scores_as_keys(const std::vector<double>& s, int64_t tq) {
  OwnedInputs o;
  o.hq = o.hkv = 1;
  o.tq = tq;
  o.tk = static_cast<int64_t>(s.size());
  o.d = 2;
  for (int64_t i = 0; i < tq; ++i) {
    o.q.push_back(1.0f);
    o.q.push_back(0.0f);
  }
  for (double x : s) {
    o.k.push_back(static_cast<float>(x));
    o.k.push_back(0.0f);
  }
  return o;
}

TEST(ScoreLocality, RandomWalkHasNormalDifferencesGrowingLikeSqrtDelta) {
  // s_j = random walk with N(0, 1) steps: delta_Delta ~ N(0, Delta) exactly.
  testing::TestRng rng(70);
  std::vector<double> s;
  double walk = 0;
  for (int j = 0; j < 20000; ++j) s.push_back(walk += rng.normal());
  const OwnedInputs o = scores_as_keys(s, 1);
  HipParams p;
  LocalityParams lp;
  lp.deltas = {1, 4, 16, 64};
  lp.bins = 40;
  const ScoreLocality loc = score_locality(o.view(false), p, 0, {0}, lp);
  ASSERT_EQ(loc.deltas.size(), 4u);
  double prev_std = 0;
  for (const DeltaStats& st : loc.deltas) {
    SCOPED_TRACE(st.delta);
    EXPECT_EQ(st.pairs, 20000 - st.delta);
    int64_t counted = 0;
    for (int64_t c : st.counts) counted += c;
    EXPECT_EQ(counted, st.pairs);
    EXPECT_NEAR(st.stddev, std::sqrt(static_cast<double>(st.delta)), 0.1 * std::sqrt(static_cast<double>(st.delta)));
    EXPECT_NEAR(st.mean, 0.0, 0.25 * std::sqrt(static_cast<double>(st.delta)));
    EXPECT_LT(st.kl_to_normal, 0.05);
    EXPECT_GT(st.stddev, prev_std);  // increasing in Delta
    prev_std = st.stddev;
  }
}

TEST(ScoreLocality, NonNormalDifferencesHaveLargeKl) {
  // Alternating 0, 1, 0, 1: delta_1 is +1 or -1, a two-point distribution far from normal.
  std::vector<double> s;
  for (int j = 0; j < 2000; ++j) s.push_back(j % 2);
  const OwnedInputs o = scores_as_keys(s, 1);
  LocalityParams lp;
  lp.deltas = {1, 2};
  lp.bins = 20;
  const ScoreLocality loc = score_locality(o.view(false), HipParams{}, 0, {0}, lp);
  EXPECT_GT(loc.deltas[0].kl_to_normal, 0.5);
  EXPECT_NEAR(loc.deltas[0].stddev, 1.0, 1e-3);
  EXPECT_EQ(loc.deltas[1].stddev, 0.0);  // delta_2 is always 0
  EXPECT_EQ(loc.deltas[1].kl_to_normal, 0.0);
}

TEST(ScoreLocality, CausalQueriesOnlySeeTheirPrefixAndHistogramIsExact) {
  // Two queries at positions 3 and 5 (tq 2 of tk 6): scores 0, 1, 3, 6, 10, 15.
  const OwnedInputs o = scores_as_keys({0, 1, 3, 6, 10, 15}, 2);
  OwnedInputs with_pos = o;
  with_pos.positions = {3, 5};
  LocalityParams lp;
  lp.deltas = {2};
  lp.bins = 4;
  const ScoreLocality loc = score_locality(with_pos.view(false), HipParams{}, 0, {0, 1}, lp);
  const DeltaStats& st = loc.deltas[0];
  // Query 0 (keys 0..3): 3, 5. Query 1 (keys 0..5): 3, 5, 7, 9. Range [3, 9], 4 bins of 1.5.
  EXPECT_EQ(st.pairs, 6);
  EXPECT_DOUBLE_EQ(st.mean, (3 + 5 + 3 + 5 + 7 + 9) / 6.0);
  EXPECT_EQ(st.hist_lo, 3);
  EXPECT_EQ(st.hist_hi, 9);
  EXPECT_EQ(st.counts, (std::vector<int64_t>{2, 2, 1, 1}));
}

// The first pass's statistics as both implementations form them: equal differences widen the range
// to one unit around them (bins of 1 / bins), and a Delta without pairs is NaN, not zero.
TEST(ScoreLocality, FirstPassGivesTheMeanAndTheHistogramRange) {
  const DeltaStats st = delta_stats_of_pass1(3, 4, 8.0, 2.0, 2.0, 5);
  EXPECT_EQ(st.delta, 3);
  EXPECT_EQ(st.pairs, 4);
  EXPECT_EQ(st.mean, 2.0);
  EXPECT_EQ(st.hist_lo, 1.5);
  EXPECT_EQ(st.hist_hi, 2.5);
  EXPECT_EQ(st.counts, std::vector<int64_t>(5, 0));
  EXPECT_EQ(histogram_scale(st), 5.0);
  const DeltaStats ranged = delta_stats_of_pass1(1, 2, 1.0, -1.0, 2.0, 6);
  EXPECT_EQ(ranged.hist_lo, -1.0);
  EXPECT_EQ(ranged.hist_hi, 2.0);
  EXPECT_EQ(histogram_scale(ranged), 2.0);
  const DeltaStats none = delta_stats_of_pass1(7, 0, 0.0, INFINITY, -INFINITY, 5);
  EXPECT_TRUE(std::isnan(none.mean) && std::isnan(none.stddev) && std::isnan(none.kl_to_normal));
  EXPECT_EQ(none.counts, std::vector<int64_t>(5, 0));
}

TEST(ScoreLocality, RejectsBadRequests) {
  const OwnedInputs o = scores_as_keys({0, 1, 2, 3}, 1);
  LocalityParams lp;
  lp.deltas = {0};
  EXPECT_THROW(score_locality(o.view(false), HipParams{}, 0, {0}, lp), HipParamError);
  lp.deltas = {1};
  EXPECT_THROW(score_locality(o.view(false), HipParams{}, 1, {0}, lp), AttentionInputError);
  EXPECT_THROW(score_locality(o.view(false), HipParams{}, 0, {1}, lp), AttentionInputError);
  lp.deltas = {10};  // longer than the sequence: no pairs
  const ScoreLocality loc = score_locality(o.view(false), HipParams{}, 0, {0}, lp);
  EXPECT_EQ(loc.deltas[0].pairs, 0);
  EXPECT_TRUE(std::isnan(loc.deltas[0].kl_to_normal));
}

// The one rule of rows and Deltas (the GUI's panel, its device path and captures read it), written
// out for a short and a long prompt: the second half's rows, 64 at most, evenly spaced; Delta 1..8,
// then x5/4 rounded down, up to the last row's position; a shown Delta added once, in order.
TEST(ScoreLocality, SampleIsTheSecondHalfAndTheGeometricSweep) {
  const LocalitySample shortp = locality_sample(10, 40);
  EXPECT_EQ(shortp.rows, (std::vector<int64_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(shortp.params.deltas, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(shortp.params.bins, 40);

  const LocalitySample longp = locality_sample(300, 25, {9, 8, 299});
  ASSERT_EQ(longp.rows.size(), 64u);
  for (size_t i = 0; i < longp.rows.size(); ++i)
    EXPECT_EQ(longp.rows[i], 150 + static_cast<int64_t>(i) * 150 / 64) << i;
  EXPECT_EQ(longp.rows.back(), 297);
  // 9 joins the sweep; 8 is in it already; 299 is past the last row (no pair there).
  EXPECT_EQ(longp.params.deltas, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 22, 27, 33, 41, 51,
                                                       63, 78, 97, 121, 151, 188, 235, 293}));
  EXPECT_EQ(longp.params.bins, 25);
  // Every Delta of the sample has pairs on the sampled rows.
  for (int64_t d : longp.params.deltas) EXPECT_LE(d, longp.rows.back());

  EXPECT_EQ(locality_sample(1, 40).rows, std::vector<int64_t>{0});
  EXPECT_TRUE(locality_sample(1, 40).params.deltas.empty());
  EXPECT_TRUE(locality_sample(0, 40).rows.empty());
}

}  // namespace
}  // namespace hipstudio::hip
