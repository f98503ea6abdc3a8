// The layer-streamed paired prefill (AnalysisOptions::viewed_layer_first): both sides run the layers
// up to the viewed one and stop with their streams and caches kept; finish_hip runs the layers above
// on both sides. Whatever the order (a cancel in either side's resumed half and a retry, new HiP
// settings before the rest ran), the results must be exactly an unsplit run's, every output the
// analysis makes: stories15M, and the Gemma 2 fixture, whose windowed and soft-capped layers
// interleave.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/analysis/paired_analysis.h"
#include "engine/runtime/run_cancelled.h"
#include "tests/engine/arch_fixture_cases.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"
#include "tests/engine/paired_results_check.h"

namespace hipstudio {
namespace {

using testing::expect_same_results;

const char* const kWindowedPrompt = "Once upon a time, there was a little girl named Lily. She loved to play.";

AnalysisOptions streamed(int64_t viewed, int64_t dense_layers) {
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.hip.dense_layers = dense_layers;
  o.decode_steps = 3;
  o.views_only_layer = viewed;
  o.viewed_layer_first = true;
  return o;
}

// The progress messages of a call, in order.
struct Seen {
  std::vector<std::string> what;
  AnalysisProgress progress(const std::string& stop_at = "") {
    return [this, stop_at](double, const std::string& w) {
      what.push_back(w);
      return w != stop_at;
    };
  }
  // The layers whose "<side> prefill, layer L" was reported.
  std::vector<int64_t> layers(const std::string& side) const {
    std::vector<int64_t> out;
    const std::string prefix = side + " prefill, layer ";
    for (const std::string& w : what)
      if (w.rfind(prefix, 0) == 0) out.push_back(std::stoll(w.substr(prefix.size())));
    return out;
  }
};

std::vector<int64_t> range(int64_t first, int64_t last) {
  std::vector<int64_t> out;
  for (int64_t l = first; l < last; ++l) out.push_back(l);
  return out;
}

// The decode steps of a whole prefill with the deferred layers' views filled in as the GUI computes
// them (quality and masks, in layer order): what an unsplit run of every layer's views gives.
PairedAnalysis completed(PairedPrefill& prefill, int64_t steps, int64_t refresh_every) {
  PairedAnalysis got = prefill.decode(steps, refresh_every);
  for (LayerQuality& q : got.layers)
    if (q.pending) {
      LayerViewsResult r = prefill.layer_views(q.layer);
      q = r.quality;
      if (r.has_masks) got.masks.push_back(r.masks);
    }
  std::sort(got.masks.begin(), got.masks.end(), [](const LayerMaskViews& a, const LayerMaskViews& b) { return a.layer < b.layer; });
  return got;
}

PairedAnalysis unsplit(const std::shared_ptr<const Model>& model, const std::string& prompt, AnalysisOptions o) {
  o.views_only_layer = -1;
  o.viewed_layer_first = false;
  return run_paired_analysis(model, prompt, o);
}

// The prefill stopped both sides after `viewed`: the viewed layer's views and inputs are there,
// nothing above it, no metrics, no decoding.
void expect_stopped_after(const PairedPrefill& prefill, int64_t viewed, int64_t layers) {
  ASSERT_TRUE(prefill.hip_pending());
  const PairedAnalysis& part = *prefill.prompt_result();
  EXPECT_EQ(part.hip_through_layer, viewed);
  EXPECT_TRUE(part.dense.nll.empty());
  EXPECT_TRUE(part.hip.nll.empty());
  EXPECT_FALSE(part.layers[static_cast<size_t>(viewed)].pending);
  EXPECT_NE(part.find_masks(viewed), nullptr);
  EXPECT_NE(part.find_inputs(viewed), nullptr);
  for (int64_t l = viewed + 1; l < layers; ++l) EXPECT_EQ(part.find_inputs(l), nullptr) << l;
}

TEST(StreamedPrefill, BothSidesStopAfterTheViewedLayerAndResumeToAnUnsplitRun) {
  const auto model = testing::default_model();
  const int64_t layers = model->config.n_layers;
  ASSERT_GE(layers, 5) << "the case needs layers above the viewed one";
  const AnalysisOptions o = streamed(2, 1);
  Seen first;
  auto prefill = PairedPrefill::run(model, testing::kStory, o, 3, first.progress());
  EXPECT_EQ(first.layers("dense"), range(0, 3)) << "the dense side ran past the viewed layer";
  EXPECT_EQ(first.layers("HiP"), range(0, 3));
  expect_stopped_after(*prefill, 2, layers);
  EXPECT_THROW(prefill->decode(3, 4), std::logic_error);

  // A cancel in the dense side's resumed half, then one in the HiP side's: the partial results stay,
  // and the retries run only what is left (the dense side whole after the second try).
  const std::shared_ptr<const PairedAnalysis> part = prefill->prompt_result();
  Seen cancelled;
  EXPECT_THROW(prefill->finish_hip(cancelled.progress("dense prefill, layer 4")), RunCancelled);
  EXPECT_EQ(cancelled.layers("dense"), range(3, 5));
  EXPECT_TRUE(cancelled.layers("HiP").empty());
  EXPECT_EQ(prefill->prompt_result(), part);
  Seen hip_cancelled;
  EXPECT_THROW(prefill->finish_hip(hip_cancelled.progress("HiP prefill, layer 4")), RunCancelled);
  EXPECT_EQ(hip_cancelled.layers("dense"), range(3, layers)) << "the dense side starts again where it stopped";
  EXPECT_EQ(hip_cancelled.layers("HiP"), range(3, 5));
  EXPECT_EQ(prefill->prompt_result(), part);
  Seen rest;
  prefill->finish_hip(rest.progress());
  EXPECT_TRUE(rest.layers("dense").empty()) << "the dense side was whole: it ran again";
  EXPECT_EQ(rest.layers("HiP"), range(3, layers));
  EXPECT_FALSE(prefill->hip_pending());
  EXPECT_EQ(part->hip_through_layer, 2) << "the partial results a view holds changed";
  expect_same_results(completed(*prefill, 3, 4), unsplit(model, testing::kStory, o), "resumed after two cancels");
}

// New HiP settings before the layers above the viewed one ran: the HiP side re-runs and stops
// again, the dense side stays where it stopped; the rest then runs both. A re-run of every layer
// (no viewed layer first) runs the dense layers left before its HiP side.
TEST(StreamedPrefill, AHipRerunBeforeTheRestKeepsTheDenseSideStopped) {
  const auto model = testing::default_model();
  const int64_t layers = model->config.n_layers;
  auto prefill = PairedPrefill::run(model, testing::kStory, streamed(1, 1), 3);
  AnalysisOptions other = streamed(3, 1);
  other.hip.hip.k = 24;
  Seen rerun;
  prefill->rerun_hip(other, rerun.progress());
  EXPECT_TRUE(rerun.layers("dense").empty()) << "a HiP re-run ran dense layers";
  EXPECT_EQ(rerun.layers("HiP"), range(1, 4));
  expect_stopped_after(*prefill, 3, layers);
  Seen rest;
  prefill->finish_hip(rest.progress());
  EXPECT_EQ(rest.layers("dense"), range(2, layers)) << "the dense side resumes above the first prefill's viewed layer";
  EXPECT_EQ(rest.layers("HiP"), range(4, layers));
  expect_same_results(completed(*prefill, 3, 4), unsplit(model, testing::kStory, other), "k 24, viewed layer 3");

  auto again = PairedPrefill::run(model, testing::kStory, streamed(1, 1), 3);
  AnalysisOptions whole = streamed(-1, 1);
  whole.viewed_layer_first = false;
  whole.hip.hip.k = 24;
  Seen all;
  again->rerun_hip(whole, all.progress());
  EXPECT_EQ(all.layers("dense"), range(2, layers));
  EXPECT_FALSE(again->hip_pending());
  expect_same_results(completed(*again, 3, 4), unsplit(model, testing::kStory, whole), "a re-run of every layer");
}

// The Gemma 2 fixture (layers 0 and 2 slide, 1 and 3 are full and soft-capped): stopped after a HiP
// layer and after a windowed one, resumed, every output equal to an unsplit run's.
TEST(StreamedPrefill, WindowedAndSoftCappedLayersResumeToAnUnsplitRun) {
  const testing::ArchFixture f = testing::read_arch_fixture("gemma2");
  const auto model = testing::load_arch_fixture_model(f, "cpu", "f32");
  const int64_t layers = model->config.n_layers;
  for (int64_t viewed : {int64_t{1}, int64_t{2}}) {
    SCOPED_TRACE("viewed layer " + std::to_string(viewed));
    const AnalysisOptions o = streamed(viewed, 0);
    Seen first;
    auto prefill = PairedPrefill::run(model, kWindowedPrompt, o, 3, first.progress());
    EXPECT_EQ(first.layers("dense"), range(0, viewed + 1));
    expect_stopped_after(*prefill, viewed, layers);
    Seen cancelled;
    EXPECT_THROW(prefill->finish_hip(cancelled.progress("dense prefill, layer " + std::to_string(viewed + 1))), RunCancelled);
    EXPECT_TRUE(cancelled.layers("HiP").empty());
    prefill->finish_hip();
    expect_same_results(completed(*prefill, 3, 4), unsplit(model, kWindowedPrompt, o), "resumed");
  }
}

}  // namespace
}  // namespace hipstudio
