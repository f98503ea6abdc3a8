// A sweep (engine/analysis/sweep.h) against its independent reference: each row must equal the row of
// a separate whole paired run (run_paired_analysis, a fresh dense prefill) with that value, for every
// field a sweep varies; its mean over the HiP layers' heads is recomputed here by brute force from the
// whole run's per-head numbers. Bad values are refused before any work.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/analysis/sweep.h"
#include "engine/formats/errors.h"
#include "engine/runtime/run_cancelled.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio {
namespace {

using hip::HipField;
using testing::default_model;

AnalysisOptions base_options() {
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.decode_steps = 6;
  o.keep_all_layers = false;
  return o;
}

// The mean over heads of the layers at or above l_d (stories15M has no windowed layers), written
// out here rather than read from the code under test.
double brute_mean(const PairedAnalysis& a, double HeadQuality::*field) {
  double sum = 0;
  int n = 0;
  for (const LayerQuality& l : a.layers)
    if (l.layer >= a.options.hip.dense_layers)
      for (const HeadQuality& h : l.heads) sum += h.*field, ++n;
  return sum / n;
}

void expect_row_matches_whole_run(const SweepRow& row, HipField field, int64_t value) {
  SCOPED_TRACE(std::string(hip::hip_field_name(field)) + " = " + std::to_string(value));
  const AnalysisOptions options = sweep_point_options(base_options(), field, value);
  const PairedAnalysis whole = run_paired_analysis(default_model(), testing::kStory, options);
  EXPECT_EQ(row.method, "hip");
  EXPECT_EQ(row.value, value);
  EXPECT_NEAR(row.recall, brute_mean(whole, &HeadQuality::recall), 1e-12);
  EXPECT_NEAR(row.mass, brute_mean(whole, &HeadQuality::mass), 1e-12);
  EXPECT_NEAR(row.out_rel_err, brute_mean(whole, &HeadQuality::out_rel_err), 1e-9);
  EXPECT_NEAR(row.kl, whole.kl, 1e-9);
  EXPECT_EQ(row.mask_refreshes, whole.mask_refreshes);
  EXPECT_TRUE(std::isnan(row.latency_ms)) << "a CPU run reports no device latency";
}

TEST(Sweep, EveryRowEqualsASeparateRunWithThatValue) {
  const std::vector<std::pair<HipField, std::vector<int64_t>>> sweeps = {
      {HipField::kK, {8, 16, 32}},         {HipField::kBk, {1, 2}},          {HipField::kBq, {4, 16}},
      {HipField::kDenseLayers, {1, 3, 0}}, {HipField::kRefreshEvery, {1, 5}},
  };
  for (const auto& [field, values] : sweeps) {
    const SweepResult r = run_sweep(default_model(), testing::kStory, base_options(), SweepSpec{field, values});
    EXPECT_EQ(r.field, field);
    EXPECT_FALSE(r.timed);
    ASSERT_EQ(r.rows.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) expect_row_matches_whole_run(r.rows[i], field, values[i]);
  }
}

// A one-layer sweep: each row's quality is that layer's mean over its heads in a whole run with that
// value (recomputed here), its KL the whole model's; a layer HiP does not replace at a value gives NaN.
TEST(Sweep, OneLayerRowsEqualThatLayerOfSeparateRuns) {
  const int64_t layer = 4;
  SweepSpec spec{HipField::kDenseLayers, {1, 5}};
  spec.views_layer = layer;
  const SweepResult r = run_sweep(default_model(), testing::kStory, base_options(), spec);
  EXPECT_EQ(r.views_layer, layer);
  ASSERT_EQ(r.rows.size(), 2u);
  const AnalysisOptions options = sweep_point_options(base_options(), HipField::kDenseLayers, 1);
  const PairedAnalysis whole = run_paired_analysis(default_model(), testing::kStory, options);
  const LayerQuality& q = whole.layers.at(static_cast<size_t>(layer));
  double recall = 0, mass = 0;
  for (const HeadQuality& h : q.heads) recall += h.recall, mass += h.mass;
  recall /= static_cast<double>(q.heads.size()), mass /= static_cast<double>(q.heads.size());
  EXPECT_NEAR(r.rows[0].recall, recall, 1e-12);
  EXPECT_NEAR(r.rows[0].mass, mass, 1e-12);
  EXPECT_NEAR(r.rows[0].kl, whole.kl, 1e-9);
  EXPECT_NE(r.rows[0].recall, brute_mean(whole, &HeadQuality::recall)) << "the mean over every HiP layer, not layer 4's";
  EXPECT_TRUE(std::isnan(r.rows[1].recall)) << "with l_d 5 layer 4 runs dense: HiP's recall there is not defined";
  EXPECT_TRUE(std::isfinite(r.rows[1].kl));
}

TEST(Sweep, AViewsLayerOutsideTheModelIsRefused) {
  SweepSpec spec{HipField::kK, {8}};
  spec.views_layer = 6;  // stories15M has 6 layers
  EXPECT_THROW(run_sweep(default_model(), testing::kStory, base_options(), spec), InputError);
}

TEST(Sweep, ValuesChangeTheNumbers) {
  // A sweep that ignored its values would give equal rows: k = 4 and k = 64 cannot have equal recall.
  const SweepResult r = run_sweep(default_model(), testing::kStory, base_options(), SweepSpec{HipField::kK, {4, 64}});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_LT(r.rows[0].mass, r.rows[1].mass);
  EXPECT_GT(r.rows[0].kl, r.rows[1].kl);
}

TEST(Sweep, BadValuesAreRefusedBeforeAnyWork) {
  int calls = 0;
  const AnalysisProgress count = [&](double, const std::string&) { return ++calls, true; };
  const auto refused = [&](HipField field, std::vector<int64_t> values, const std::string& needle) {
    try {
      run_sweep(default_model(), testing::kStory, base_options(), SweepSpec{field, values}, count);
      ADD_FAILURE() << "no refusal for " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused(HipField::kK, {16, 15}, "k = 15");             // not a multiple of b_k
  refused(HipField::kBk, {3}, "b_k = 3");                // k 16 is no multiple of 3
  refused(HipField::kDenseLayers, {1, 6}, "l_d = 6");    // stories15M has 6 layers
  refused(HipField::kRefreshEvery, {0}, "r_m = 0");
  refused(HipField::kSink, {2}, "a sweep varies");
  refused(HipField::kK, {}, "at least one value");
  EXPECT_EQ(calls, 0) << "a refused sweep started work";
}

TEST(Sweep, CancelStopsTheSweep) {
  const AnalysisProgress stop_in_second = [](double f, const std::string&) { return f < 0.5; };
  EXPECT_THROW(run_sweep(default_model(), testing::kStory, base_options(), SweepSpec{HipField::kK, {8, 16}}, stop_in_second),
               RunCancelled);
}

}  // namespace
}  // namespace hipstudio
