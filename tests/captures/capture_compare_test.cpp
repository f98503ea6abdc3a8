// captures::compare_captures (capture_compare.h): per layer, A's and B's head means and B - A,
// computed here by brute force from the two analyses; the model's numbers; what differs between
// the runs; layers only one side has; and the printed table of `open A --compare B --print`.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "captures/capture_compare.h"
#include "tests/captures/capture_fixture.h"

namespace {

using namespace hipstudio;
using namespace hipstudio::captures;

double brute_mean(const LayerQuality& q, double HeadQuality::*f) {
  double s = 0;
  int n = 0;
  for (const HeadQuality& h : q.heads)
    if (!std::isnan(h.*f)) s += h.*f, ++n;
  return n ? s / n : std::numeric_limits<double>::quiet_NaN();
}

TEST(CaptureCompare, LayersHoldBothSidesAndTheirDifference) {
  const PairedAnalysis a = hipstudio::testing::synthetic_analysis();
  PairedAnalysis b = a;
  b.options.hip.hip.k = 16;
  b.kl = a.kl + 0.25;
  for (LayerQuality& q : b.layers)
    for (HeadQuality& h : q.heads) h.recall = 1.0 - h.recall * 0.5, h.out_rel_err *= 3;
  b.hip.latency.prefill_layers[1].sparse += 2.0;
  const CaptureComparison c = compare_captures(a, b);
  ASSERT_EQ(c.layers.size(), a.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const ComparedLayer& r = c.layers[l];
    EXPECT_EQ(r.layer, a.layers[l].layer);
    EXPECT_TRUE(r.in_a && r.in_b);
    EXPECT_DOUBLE_EQ(r.recall.a, brute_mean(a.layers[l], &HeadQuality::recall));
    EXPECT_DOUBLE_EQ(r.recall.b, brute_mean(b.layers[l], &HeadQuality::recall));
    EXPECT_DOUBLE_EQ(r.recall.diff(), r.recall.b - r.recall.a);
    EXPECT_DOUBLE_EQ(r.out_rel_err.b, brute_mean(b.layers[l], &HeadQuality::out_rel_err));
    EXPECT_DOUBLE_EQ(r.mass.diff(), 0.0);
    const ComponentMs& ma = a.hip.latency.prefill_layers[l];
    EXPECT_DOUBLE_EQ(r.hip_prefill_ms.a, ma.mask + ma.sparse + ma.dense + ma.other);
  }
  EXPECT_DOUBLE_EQ(c.layers[1].hip_prefill_ms.diff(), 2.0);
  EXPECT_DOUBLE_EQ(c.layers[0].hip_prefill_ms.diff(), 0.0);
  ASSERT_FALSE(c.model.empty());
  EXPECT_EQ(c.model[0].first, "KL(dense || HiP)");
  EXPECT_NEAR(c.model[0].second.diff(), 0.25, 1e-12);
  ASSERT_EQ(c.differences.size(), 1u);
  EXPECT_EQ(c.differences[0], "k 8 vs 16");
  // The same run on both sides: every difference is zero and nothing differs.
  const CaptureComparison same = compare_captures(a, a);
  EXPECT_TRUE(same.differences.empty());
  for (const ComparedLayer& r : same.layers) EXPECT_EQ(r.recall.diff(), 0.0);
}

TEST(CaptureCompare, ALayerOnlyOneSideHasIsShownWithoutTheOther) {
  const PairedAnalysis a = hipstudio::testing::synthetic_analysis();
  PairedAnalysis b = a;
  b.layers.pop_back();
  b.hip.latency.prefill_layers.pop_back();
  b.layers[0].heads[0].recall = std::numeric_limits<double>::quiet_NaN();  // a windowed head: skipped
  const CaptureComparison c = compare_captures(a, b);
  ASSERT_EQ(c.layers.size(), a.layers.size());
  const ComparedLayer& last = c.layers.back();
  EXPECT_TRUE(last.in_a);
  EXPECT_FALSE(last.in_b);
  EXPECT_TRUE(std::isnan(last.recall.b));
  EXPECT_TRUE(std::isnan(last.recall.diff()));
  EXPECT_DOUBLE_EQ(c.layers[0].recall.b, brute_mean(b.layers[0], &HeadQuality::recall));
  EXPECT_DOUBLE_EQ(c.layers[0].recall.b, a.layers[0].heads[1].recall);
  EXPECT_NE(c.differences.back().find("layers 2 vs 1"), std::string::npos);
  // The printed table: both names, a row per layer, "-" where a side lacks the number.
  const std::string t = comparison_text(c, "a.hipcap", "b.hipcap");
  EXPECT_NE(t.find("A: a.hipcap"), std::string::npos) << t;
  EXPECT_NE(t.find("B: b.hipcap"), std::string::npos) << t;
  EXPECT_NE(t.find("recall: A B B-A"), std::string::npos) << t;
  EXPECT_NE(t.find("\n1      "), std::string::npos) << t;
  EXPECT_NE(t.find("            -"), std::string::npos) << t;
}

}  // namespace
