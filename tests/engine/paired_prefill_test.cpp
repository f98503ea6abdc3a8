// The paired run in two halves (an r_m change must not re-run both prefills):
// decode steps re-run on a kept prefill must equal a whole run with those settings, whatever ran
// on that prefill before, and the prefill's own results must not change.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "engine/formats/errors.h"
#include "kernels/hip_params.h"
#include "engine/analysis/paired_analysis.h"
#include "engine/runtime/run_cancelled.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"
#include "tests/engine/paired_results_check.h"

namespace hipstudio {
namespace {

using testing::default_model;
using testing::expect_same_results;
using testing::kStory;

AnalysisOptions options_with(int64_t refresh_every, int64_t decode_steps) {
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.hip.refresh_every = refresh_every;
  o.decode_steps = decode_steps;
  return o;
}

TEST(PairedPrefill, DecodeRerunsEqualWholeRunsWithTheirSettings) {
  auto prefill = PairedPrefill::run(default_model(), kStory, options_with(4, 6), 12);
  ASSERT_EQ(prefill->decode_room(), 12);
  const PairedAnalysis& prompt = *prefill->prompt_result();
  EXPECT_TRUE(prompt.decode.empty());
  EXPECT_EQ(prompt.access.steps, 0);
  // Other r_m and step counts, in an order where each run follows a longer or different one, or
  // one of as many steps (its dense side's steps are replayed, not run again).
  const std::pair<int64_t, int64_t> settings[] = {{4, 6}, {2, 12}, {3, 12}, {3, 3}, {5, 0}, {6, 3}};
  for (const auto& [rm, steps] : settings) {
    const PairedAnalysis rerun = prefill->decode(steps, rm);
    const PairedAnalysis whole = run_paired_analysis(default_model(), kStory, options_with(rm, steps));
    expect_same_results(rerun, whole, "r_m " + std::to_string(rm) + ", " + std::to_string(steps) + " steps");
    EXPECT_EQ(rerun.mask_refreshes, (steps + rm - 1) / rm);
  }
  EXPECT_TRUE(prefill->prompt_result()->decode.empty()) << "a decode run changed the prefill's results";
}

TEST(PairedPrefill, FinishMovesThePromptResultsAndEndsTheDecodes) {
  auto prefill = PairedPrefill::run(default_model(), kStory, options_with(4, 5), 5);
  const PairedAnalysis copied = prefill->decode(5, 4);
  const PairedAnalysis moved = prefill->finish(5, 4);
  expect_same_results(moved, copied, "finish against decode");
  EXPECT_FALSE(moved.inputs.empty());
  EXPECT_EQ(prefill->prompt_result(), nullptr);
  EXPECT_THROW(prefill->decode(5, 4), std::logic_error);
}

TEST(PairedPrefill, StepsPastTheRoomOrABadRmAreRefused) {
  auto prefill = PairedPrefill::run(default_model(), kStory, options_with(4, 2), 4);
  EXPECT_THROW(prefill->decode(5, 4), InputError);
  EXPECT_THROW(prefill->decode(-1, 4), InputError);
  EXPECT_THROW(prefill->decode(2, 0), hip::HipParamError);
  // The refusals left the prefill usable.
  expect_same_results(prefill->decode(4, 3), run_paired_analysis(default_model(), kStory, options_with(3, 4)), "after refusals");
}

// The GUI's viewed layer first: a prefill that computes one layer's views and defers the rest must
// give, layer by layer, exactly what a prefill computing them all gives (quality and masks), and
// nothing else of its results may differ.
TEST(PairedPrefill, DeferredLayerViewsEqualThePrefillsOwn) {
  AnalysisOptions o = options_with(4, 3);
  auto all = PairedPrefill::run(default_model(), kStory, o, 3);
  o.views_only_layer = 2;
  auto first = PairedPrefill::run(default_model(), kStory, o, 3);
  const PairedAnalysis& whole = *all->prompt_result();
  const PairedAnalysis& part = *first->prompt_result();
  const int64_t layers = default_model()->config.n_layers;
  ASSERT_EQ(static_cast<int64_t>(part.layers.size()), layers);
  EXPECT_TRUE(all->pending_views().empty());
  std::vector<int64_t> expected_pending;
  for (int64_t l = 0; l < layers; ++l)
    if (l != 2) expected_pending.push_back(l);
  EXPECT_EQ(first->pending_views(), expected_pending);
  EXPECT_FALSE(part.layers[2].pending);
  ASSERT_EQ(part.masks.size(), 1u);
  EXPECT_EQ(part.masks[0].layer, 2);
  EXPECT_EQ(part.dense.nll, whole.dense.nll);
  EXPECT_EQ(part.hip.nll, whole.hip.nll);
  EXPECT_THROW(first->layer_views(2), std::logic_error) << "layer 2's views are not pending";
  for (int64_t l = 0; l < layers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const LayerQuality& want = whole.layers[static_cast<size_t>(l)];
    const LayerViewsResult got = l == 2 ? LayerViewsResult{part.layers[2], true, part.masks[0]} : first->layer_views(l);
    EXPECT_FALSE(got.quality.pending);
    EXPECT_EQ(got.quality.dense, want.dense);
    ASSERT_EQ(got.quality.heads.size(), want.heads.size());
    for (size_t h = 0; h < want.heads.size(); ++h) {
      EXPECT_EQ(got.quality.heads[h].recall, want.heads[h].recall) << "head " << h;
      EXPECT_EQ(got.quality.heads[h].mass, want.heads[h].mass) << "head " << h;
      EXPECT_EQ(got.quality.heads[h].out_rel_err, want.heads[h].out_rel_err) << "head " << h;
      EXPECT_EQ(got.quality.heads[h].random_recall, want.heads[h].random_recall) << "head " << h;
    }
    const LayerMaskViews* m = whole.find_masks(l);
    ASSERT_NE(m, nullptr);
    ASSERT_TRUE(got.has_masks);
    EXPECT_EQ(got.masks.hip.blocks, m->hip.blocks);
    EXPECT_EQ(got.masks.oracle.blocks, m->oracle.blocks);
    EXPECT_EQ(got.masks.random.blocks, m->random.blocks);
    EXPECT_EQ(got.masks.recall, m->recall);
  }
  // Deferring changes nothing the decode half computes.
  const PairedAnalysis a = first->decode(3, 4), b = all->decode(3, 4);
  EXPECT_EQ(a.hip.generated, b.hip.generated);
  EXPECT_EQ(a.dense.generated, b.dense.generated);
  EXPECT_EQ(a.access.mask_keys, b.access.mask_keys);
  EXPECT_EQ(a.access.sparse_keys, b.access.sparse_keys);
}

// New HiP settings re-run the HiP side only, against the kept dense prefill: the results must be a
// fresh run's with those settings, prompt and decode steps alike, and a cancelled re-run must leave
// a prefill that refuses to decode rather than one that decodes from a half-written cache.
TEST(PairedPrefill, HipRerunsEqualFreshRunsWithTheirSettings) {
  AnalysisOptions first = options_with(4, 3);
  auto prefill = PairedPrefill::run(default_model(), kStory, first, 3);
  AnalysisOptions other = first;
  other.hip.hip.k = 16;
  other.hip.dense_layers = 2;
  other.random_seed = 9;
  prefill->rerun_hip(other);
  EXPECT_EQ(prefill->hip_first_layer(), 1) << "l_d 1 -> 2: layer 0 is dense either way";
  const PairedAnalysis rerun = prefill->decode(3, 4);
  expect_same_results(rerun, run_paired_analysis(default_model(), kStory, other), "k 16, l_d 2");
  // Back to the first settings: the dense side was never re-run and still matches. l_d goes down:
  // layer 0 stays dense, so the run resumes from the stream entering layer 1 (kept by both runs).
  prefill->rerun_hip(first);
  EXPECT_EQ(prefill->hip_first_layer(), 1) << "l_d 2 -> 1: only the layers from the new l_d on run";
  expect_same_results(prefill->decode(3, 4), run_paired_analysis(default_model(), kStory, first), "back to the first");
  // l_d up by two, then down by one and to 0: each run starts at the lower of the two l_d (the
  // stream entering layer 2 comes from the l_d 3 run), and 0 runs every layer.
  for (const auto& [ld, resumes] : {std::pair<int64_t, int64_t>{3, 1}, {2, 2}, {0, 0}, {1, 0}}) {
    AnalysisOptions next = first;
    next.hip.dense_layers = ld;
    prefill->rerun_hip(next);
    EXPECT_EQ(prefill->hip_first_layer(), resumes) << "l_d " << ld;
    expect_same_results(prefill->decode(3, 4), run_paired_analysis(default_model(), kStory, next), "l_d " + std::to_string(ld));
  }
  // k and b_q alone, the viewed layer below l_d and one above it: from l_d on.
  for (int64_t viewed : {int64_t{0}, int64_t{4}}) {
    AnalysisOptions next = first;
    next.hip.hip.k = viewed == 0 ? 24 : 12;
    next.hip.hip.b_q = viewed == 0 ? 16 : 8;
    next.views_only_layer = viewed;
    prefill->rerun_hip(next);
    EXPECT_EQ(prefill->hip_first_layer(), 1) << "viewed layer " << viewed;
    PairedAnalysis resumed = prefill->decode(3, 4);
    next.views_only_layer = -1;
    const PairedAnalysis whole = run_paired_analysis(default_model(), kStory, next);
    for (LayerQuality& q : resumed.layers)
      if (q.pending) {  // the deferred layers' views, as the GUI computes them later
        LayerViewsResult r = prefill->layer_views(q.layer);
        q = r.quality;
      }
    EXPECT_FALSE(resumed.layers[static_cast<size_t>(viewed)].pending);
    ASSERT_EQ(resumed.layers.size(), whole.layers.size());
    for (size_t l = 0; l < whole.layers.size(); ++l)
      for (size_t h = 0; h < whole.layers[l].heads.size(); ++h)
        EXPECT_EQ(resumed.layers[l].heads[h].recall, whole.layers[l].heads[h].recall) << l << "/" << h;
    EXPECT_EQ(resumed.hip.nll, whole.hip.nll) << "viewed layer " << viewed;
    EXPECT_EQ(resumed.hip.generated, whole.hip.generated) << "viewed layer " << viewed;
    EXPECT_EQ(resumed.inputs.size(), whole.inputs.size());
  }

  EXPECT_THROW(prefill->rerun_hip(other, [](double, const std::string& what) { return what.rfind("HiP prefill, layer 2", 0) != 0; }),
               RunCancelled);
  EXPECT_THROW(prefill->decode(3, 4), std::logic_error) << "a cancelled re-run left a prefill that decodes";
}

// The viewed layer first: the HiP prefill stops after the viewed layer (its views are there, the
// layers above wait, decoding is refused), and finish_hip brings the whole results, exactly a whole
// prefill's; a cancelled finish leaves the partial results and can run again. The same through
// rerun_hip with new settings (which resumes at l_d).
TEST(PairedPrefill, ViewedLayerFirstThenTheRestEqualsAWholePrefill) {
  const int64_t layers = default_model()->config.n_layers;
  AnalysisOptions o = options_with(4, 3);
  o.views_only_layer = 2;
  o.viewed_layer_first = true;
  auto prefill = PairedPrefill::run(default_model(), kStory, o, 3);
  auto check = [&](const AnalysisOptions& settings, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(prefill->hip_pending());
    const std::shared_ptr<const PairedAnalysis> part = prefill->prompt_result();
    EXPECT_EQ(part->hip_through_layer, 2);
    EXPECT_TRUE(part->hip.nll.empty());
    EXPECT_FALSE(part->layers[2].pending);
    ASSERT_NE(part->find_masks(2), nullptr);
    for (int64_t l = 3; l < layers; ++l) {
      EXPECT_TRUE(part->layers[static_cast<size_t>(l)].pending) << l;
      EXPECT_EQ(part->find_inputs(l), nullptr) << l;
    }
    EXPECT_THROW(prefill->decode(3, 4), std::logic_error);
    EXPECT_THROW(prefill->finish_hip([](double, const std::string& w) { return w.rfind("HiP prefill, layer 4", 0) != 0; }),
                 RunCancelled);
    EXPECT_TRUE(prefill->hip_pending()) << "a cancelled finish leaves the partial results";
    EXPECT_EQ(prefill->prompt_result(), part);
    prefill->finish_hip();
    EXPECT_FALSE(prefill->hip_pending());
    EXPECT_EQ(prefill->prompt_result()->hip_through_layer, -1);
    EXPECT_EQ(part->hip_through_layer, 2) << "the partial results a view holds are not changed";
    PairedAnalysis got = prefill->decode(3, 4);
    for (LayerQuality& q : got.layers)
      if (q.pending) {  // as the GUI's background stage computes them
        LayerViewsResult r = prefill->layer_views(q.layer);
        q = r.quality;
        got.masks.push_back(r.masks);
      }
    std::sort(got.masks.begin(), got.masks.end(), [](const LayerMaskViews& a, const LayerMaskViews& b) { return a.layer < b.layer; });
    AnalysisOptions whole_options = settings;
    whole_options.views_only_layer = -1;
    whole_options.viewed_layer_first = false;
    const PairedAnalysis whole = run_paired_analysis(default_model(), kStory, whole_options);
    expect_same_results(got, whole, what);
    for (size_t l = 0; l < whole.layers.size(); ++l)
      for (size_t h = 0; h < whole.layers[l].heads.size(); ++h)
        EXPECT_EQ(got.layers[l].heads[h].mass, whole.layers[l].heads[h].mass) << l << "/" << h;
  };
  check(o, "first prefill");
  AnalysisOptions other = o;
  other.hip.hip.k = 24;
  prefill->rerun_hip(other);
  EXPECT_EQ(prefill->hip_first_layer(), 1);
  check(other, "k 24");
}

TEST(PairedPrefill, TheRoomStopsAtTheContext) {
  const int64_t n = static_cast<int64_t>(default_model()->tokenizer->encode(kStory, true).size());
  const int64_t context = default_model()->config.max_seq_len;
  auto prefill = PairedPrefill::run(default_model(), kStory, options_with(4, 2), context * 2);
  EXPECT_EQ(prefill->decode_room(), context - n);
}

}  // namespace
}  // namespace hipstudio
