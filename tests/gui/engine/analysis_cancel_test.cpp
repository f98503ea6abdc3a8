// The GUI's Cancel reaches the engine through the paired analysis's progress callback: it must be
// honoured inside the prefills (after any layer, not only between phases), and a cancelled run must
// leave nothing behind in the shared model: the next run equals an uncancelled one.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/analysis/paired_analysis.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her red "
    "ball. One day, she saw a big dog near the swings. The dog was brown and had a long tail.";

AnalysisOptions small_options() {
  AnalysisOptions o;
  o.hip.hip.k = 16;
  o.hip.hip.b_q = 8;
  o.hip.hip.b_k = 2;
  o.hip.hip.sink = 2;
  o.hip.hip.window = 4;
  o.hip.dense_layers = 1;
  o.hip.refresh_every = 2;
  o.decode_steps = 3;
  return o;
}

// Runs an analysis whose progress callback cancels at the report named `stop_at`; returns what it saw.
std::vector<std::string> cancel_at(const std::string& stop_at) {
  std::vector<std::string> seen;
  EXPECT_THROW(run_paired_analysis(testing::default_model(), kStory, small_options(),
                                   [&](double, const std::string& what) {
                                     seen.push_back(what);
                                     return what != stop_at;
                                   }),
               RunCancelled)
      << "no cancel at " << stop_at;
  return seen;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

TEST(AnalysisCancel, EveryPrefillLayerReportsProgressInOrder) {
  std::vector<std::string> seen;
  std::vector<double> fractions;
  run_paired_analysis(testing::default_model(), kStory, small_options(), [&](double f, const std::string& what) {
    seen.push_back(what);
    fractions.push_back(f);
    return true;
  });
  const int64_t layers = testing::default_model()->config.n_layers;
  for (int64_t l = 0; l < layers; ++l) {
    EXPECT_NE(std::find(seen.begin(), seen.end(), "dense prefill, layer " + std::to_string(l)), seen.end()) << l;
    EXPECT_NE(std::find(seen.begin(), seen.end(), "HiP prefill, layer " + std::to_string(l)), seen.end()) << l;
  }
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end())) << "progress went backwards";
  EXPECT_EQ(fractions.back(), 1.0);
}

TEST(AnalysisCancel, HonouredInsideBothPrefills) {
  // Dense side, layer 2: the cancel is the last report; the HiP side never started.
  std::vector<std::string> seen = cancel_at("dense prefill, layer 2");
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), "dense prefill, layer 2");
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const std::string& s) { return starts_with(s, "HiP prefill"); }), 0);
  // HiP side, layer 3: no layer quality or decode step ran.
  seen = cancel_at("HiP prefill, layer 3");
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), "HiP prefill, layer 3");
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const std::string& s) { return s.find("quality") != std::string::npos; }), 0);
}

TEST(AnalysisCancel, ARunAfterACancelEqualsAnUncancelledOne) {
  const PairedAnalysis before = run_paired_analysis(testing::default_model(), kStory, small_options());
  cancel_at("HiP prefill, layer 1");
  cancel_at("decode step 1");
  const PairedAnalysis after = run_paired_analysis(testing::default_model(), kStory, small_options());
  EXPECT_EQ(before.dense.nll, after.dense.nll);
  EXPECT_EQ(before.hip.nll, after.hip.nll);
  EXPECT_EQ(before.kl, after.kl);
  EXPECT_EQ(before.hip.generated, after.hip.generated);
  EXPECT_EQ(before.access.mask_keys, after.access.mask_keys);
}

}  // namespace
}  // namespace hipstudio
