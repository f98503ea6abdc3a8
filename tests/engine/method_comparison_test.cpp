// The method comparison (engine/analysis/method_comparison.h) on stories15M: each method's side
// runs that method's masks (checked against the registry's CPU reference called directly on the
// kept inputs, and by properties a side running the wrong masks breaks: the oracle side's recall
// is 1, the random side's numbers are the views' random baseline), HiP's entry equals the plain
// paired run, and a method with prompt state (vslash) decodes from it.
#include <cmath>

#include <gtest/gtest.h>

#include "engine/analysis/layer_view.h"
#include "engine/analysis/memory_estimate.h"
#include "engine/analysis/method_comparison.h"
#include "engine/analysis/paired_analysis.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio {
namespace {

namespace hm = hip::methods;
using testing::default_model;
using testing::kStory;

AnalysisOptions small_options() {
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.keep_all_layers = false;
  return o;
}

hm::MethodChoice choice(const std::string& name, hm::MethodValues given = {}) {
  const hm::SelectionMethod& m = hm::find_selection_method(name);
  return {name, hm::resolve_values(m, given, testing::small_hip_params().hip)};
}

TEST(MethodComparison, HipEntryEqualsThePlainPairedRun) {
  AnalysisOptions o = small_options();
  o.decode_steps = 6;
  const PairedAnalysis plain = run_paired_analysis(default_model(), kStory, o);
  const std::vector<MethodRun> runs = run_method_comparison(default_model(), kStory, o, {choice("hip"), choice("quest", {{"quest_page", 4}})});
  ASSERT_EQ(runs.size(), 2u);
  const PairedAnalysis& a = runs[0].analysis;
  EXPECT_EQ(a.hip.nll, plain.hip.nll);
  EXPECT_EQ(a.hip.generated, plain.hip.generated);
  EXPECT_EQ(a.dense.nll, plain.dense.nll);
  EXPECT_DOUBLE_EQ(a.kl, plain.kl);
  ASSERT_EQ(a.layers.size(), plain.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l)
    for (size_t h = 0; h < a.layers[l].heads.size(); ++h) {
      EXPECT_DOUBLE_EQ(a.layers[l].heads[h].recall, plain.layers[l].heads[h].recall) << l << " " << h;
      EXPECT_DOUBLE_EQ(a.layers[l].heads[h].out_rel_err, plain.layers[l].heads[h].out_rel_err) << l << " " << h;
    }
  // The other method shares the dense side and differs on the sparse one.
  EXPECT_EQ(runs[1].analysis.dense.nll, plain.dense.nll);
  EXPECT_NE(runs[1].analysis.hip.nll, plain.hip.nll);
}

TEST(MethodComparison, OracleSideRecallsEverythingAndRandomSideIsTheViewsBaseline) {
  AnalysisOptions o = small_options();
  o.random_seed = 7;
  const std::vector<MethodRun> runs =
      run_method_comparison(default_model(), kStory, o, {choice("oracle"), choice("random", {{"random_seed", 7}})});
  int sparse_heads = 0;
  for (const LayerQuality& layer : runs[0].analysis.layers) {
    if (layer.dense) continue;
    for (const HeadQuality& h : layer.heads) {
      EXPECT_EQ(h.recall, 1.0) << "layer " << layer.layer;
      ++sparse_heads;
    }
  }
  EXPECT_GT(sparse_heads, 0);
  // The random side draws as the views' random baseline does (same seed rule): its recall is the
  // baseline's recall on its own inputs, and differs from HiP's. The comparison reports only each
  // side's own numbers: the baseline's mass and output error are not computed (NaN).
  bool differs_from_hip = false;
  for (const LayerQuality& layer : runs[1].analysis.layers) {
    if (layer.dense) continue;
    for (const HeadQuality& h : layer.heads) {
      EXPECT_DOUBLE_EQ(h.recall, h.random_recall) << "layer " << layer.layer;
      EXPECT_TRUE(std::isnan(h.random_mass) && std::isnan(h.random_out_rel_err)) << "layer " << layer.layer;
      differs_from_hip |= h.recall < 1.0;
    }
  }
  EXPECT_TRUE(differs_from_hip);
  // At the first sparse layer both runs' inputs are the dense stream's: the random side's mass and
  // output error there are a plain run's random baseline.
  const PairedAnalysis plain = run_paired_analysis(default_model(), kStory, o);
  const int64_t first = o.hip.dense_layers;
  ASSERT_LT(first, static_cast<int64_t>(plain.layers.size()));
  const LayerQuality& side = runs[1].analysis.layers[static_cast<size_t>(first)];
  const LayerQuality& base = plain.layers[static_cast<size_t>(first)];
  ASSERT_FALSE(side.dense);
  for (size_t h = 0; h < side.heads.size(); ++h) {
    EXPECT_NEAR(side.heads[h].mass, base.heads[h].random_mass, 1e-12) << "head " << h;
    EXPECT_NEAR(side.heads[h].out_rel_err, base.heads[h].random_out_rel_err, 1e-12) << "head " << h;
  }
}

TEST(MethodComparison, EachSideMasksAreItsMethodsReferenceOnTheKeptInputs) {
  AnalysisOptions o = small_options();
  o.keep_all_layers = true;
  const std::vector<hm::MethodChoice> methods = {choice("streaming"), choice("quest", {{"quest_page", 4}}),
                                                 choice("vslash")};
  const std::vector<MethodRun> runs = run_method_comparison(default_model(), kStory, o, methods);
  ASSERT_EQ(runs.size(), methods.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const PairedAnalysis& a = runs[i].analysis;
    const hm::SelectionMethod& method = hm::find_selection_method(methods[i].name);
    ASSERT_FALSE(a.masks.empty()) << methods[i].name;
    for (const LayerMaskViews& m : a.masks) {
      EXPECT_EQ(m.method, methods[i].name);
      const hip::MaskResult want =
          hm::select_masks(method, layer_view(*a.find_inputs(m.layer)), hm::choice_context(methods[i], o.hip.hip, m.layer));
      EXPECT_EQ(m.hip.blocks, want.blocks) << methods[i].name << " layer " << m.layer;
      EXPECT_EQ(m.hip.counts, want.counts) << methods[i].name << " layer " << m.layer;
    }
  }
}

// later_inputs false (a capture): the methods after the first keep their masks, equal to those of a
// comparison that keeps every method's inputs, and drop their Q/K/V; the first keeps its inputs.
TEST(MethodComparison, LaterMethodsCanDropTheirInputsAndKeepTheirMasks) {
  AnalysisOptions o = small_options();
  o.keep_all_layers = false;
  o.keep_layers = {2, 4};
  const std::vector<hm::MethodChoice> methods = {choice("hip"), choice("streaming"), choice("vslash")};
  const std::vector<MethodRun> all = run_method_comparison(default_model(), kStory, o, methods);
  const std::vector<MethodRun> lean = run_method_comparison(default_model(), kStory, o, methods, {}, /*later_inputs=*/false);
  ASSERT_EQ(lean.size(), methods.size());
  EXPECT_EQ(lean[0].analysis.inputs.size(), 2u);
  for (size_t i = 0; i < methods.size(); ++i) {
    if (i > 0) {
      EXPECT_TRUE(lean[i].analysis.inputs.empty()) << methods[i].name;
    }
    ASSERT_EQ(lean[i].analysis.masks.size(), 2u) << methods[i].name;
    for (size_t m = 0; m < 2; ++m) EXPECT_EQ(lean[i].analysis.masks[m].hip.blocks, all[i].analysis.masks[m].hip.blocks);
  }
}

// A capture of several methods counts each side's masks and access streams, and two sets of kept inputs.
TEST(MethodComparison, TheMemoryPlanCountsEveryMethodsSide) {
  ModelConfig c = default_model()->config;
  AnalysisMemoryShape one;
  one.hip.hip = small_options().hip.hip;
  one.kept_layers = 2;
  one.capture = one.capture_masks = true;
  AnalysisMemoryShape three = one;
  three.methods = 3;
  const RunMemoryShape s1{200, 8, 200, false, &one}, s3{200, 8, 200, false, &three};
  const RunDevice cpu{c10::Device(c10::kCPU), c10::kFloat};
  const MemoryEstimate e1 = estimate_run_memory(c, cpu, s1), e3 = estimate_run_memory(c, cpu, s3);
  EXPECT_EQ(e3.bytes(memory_line::kMasks), 3 * e1.bytes(memory_line::kMasks));
  EXPECT_EQ(e3.bytes(memory_line::kAccessStreams), 3 * e1.bytes(memory_line::kAccessStreams));
  EXPECT_EQ(e3.bytes(memory_line::kKeptQkv), 2 * e1.bytes(memory_line::kKeptQkv));
}

TEST(MethodComparison, MethodsDecodeWithTheirRefreshesAndPromptState) {
  AnalysisOptions o = small_options();
  o.decode_steps = 9;  // r_m 4: refreshes at steps 0, 4 and 8
  const std::vector<MethodRun> runs =
      run_method_comparison(default_model(), kStory, o, {choice("vslash"), choice("streaming")});
  for (const MethodRun& r : runs) {
    EXPECT_EQ(r.analysis.decode.size(), 9u) << r.method.name;
    EXPECT_EQ(r.analysis.mask_refreshes, 3) << r.method.name;
    EXPECT_TRUE(std::isfinite(r.analysis.hip.ppl)) << r.method.name;
  }
}

TEST(MethodComparison, BadMethodValuesAreRefusedBeforeAnyWork) {
  AnalysisOptions o = small_options();
  hm::MethodChoice quest = choice("quest", {{"quest_page", 4}});
  quest.values["quest_page"] = 3;  // not a multiple of b_k 2
  EXPECT_THROW(run_method_comparison(default_model(), kStory, o, {choice("hip"), quest}), hip::HipParamError);
  EXPECT_THROW(run_method_comparison(default_model(), kStory, o, {hm::MethodChoice{"h2o", {}}}), hip::HipParamError);
}

}  // namespace
}  // namespace hipstudio
