// The method masks stage (the Side by side panel's methods): each compared method's mask of the
// viewed layer is the method's reference on the layer's inputs with its recall against the layer
// views' oracle; HiP's and the oracle's come from the layer views; each (method, values, layer,
// run) is computed once, so switching between compared methods or heads computes nothing, while
// a new layer or a new run does; a method the knobs refuse fails alone.
#include <gtest/gtest.h>

#include "app/gui/worker.h"
#include "kernels/methods/selection_method.h"
#include "kernels/oracle.h"
#include "tests/gui/worker/fake_engine_jobs.h"
#include "tests/gui/worker/worker_settle.h"

namespace hipstudio::gui {
namespace {

namespace hm = hip::methods;

Request base_request(std::vector<std::string> names) {
  Request r;
  r.model.path = "fake";
  r.prompt = std::string(kFakeLayeredPrompt) + " method masks";
  r.hip.hip.k = 32;
  r.hip.hip.b_q = 8;
  r.hip.hip.b_k = 2;
  r.hip.dense_layers = 0;
  r.decode_steps = 2;
  r.layer = 1;
  for (const std::string& n : names)
    r.compare_methods.push_back({n, hm::resolve_values(hm::find_selection_method(n), {}, r.hip.hip)});
  return r;
}

void expect_reference(const Snapshot& snap, const MethodMaskView& v) {
  ASSERT_TRUE(v.masks) << v.method.name << ": " << v.error;
  const LayerMaskSnapshot& own = *snap.masks;
  const hip::AttentionInputs in = snap.analysis->inputs(own.layer);
  const hip::MaskResult want =
      hm::select_masks(hm::find_selection_method(v.method.name), in, hm::choice_context(v.method, own.params, own.layer));
  EXPECT_EQ(v.masks->hip.blocks, want.blocks) << v.method.name;
  EXPECT_EQ(v.masks->hip.counts, want.counts) << v.method.name;
  EXPECT_EQ(v.masks->recall, hip::mask_recall(want, own.oracle)) << v.method.name;
  EXPECT_EQ(v.masks->method, v.method.name);
  EXPECT_EQ(&v.masks->oracle, &own.oracle) << "the layer's oracle is shared, not copied";
}

TEST(MethodMasksStage, EachMethodsMaskIsItsReferenceWithRecallAgainstTheLayersOracle) {
  Worker w;
  w.submit(base_request({"hip", "oracle", "streaming", "quest"}));
  const auto snap = settle(w);
  ASSERT_TRUE(snap);
  ASSERT_TRUE(snap->fresh(kStageMethodMasks)) << snap->error[kStageMethodMasks];
  ASSERT_TRUE(snap->method_masks);
  const MethodMasksView& mm = *snap->method_masks;
  EXPECT_EQ(mm.layer, 1);
  ASSERT_EQ(mm.methods.size(), 4u);
  EXPECT_EQ(mm.methods[0].masks, snap->masks) << "HiP's is the layer views' own";
  EXPECT_TRUE(mm.methods[0].reused && mm.methods[1].reused);
  EXPECT_EQ(mm.methods[1].masks->hip.blocks, snap->masks->oracle.blocks);
  for (double r : mm.methods[1].masks->recall) EXPECT_EQ(r, 1.0);
  for (size_t i = 1; i < mm.methods.size(); ++i) expect_reference(*snap, mm.methods[i]);
  EXPECT_FALSE(mm.methods[2].device_timing) << "the CPU reference is no device timing";
}

TEST(MethodMasksStage, SwitchingMethodsOrHeadsComputesNothingANewLayerOrRunDoes) {
  Worker w;
  Request r = base_request({"streaming", "quest", "vslash"});
  w.submit(r);
  ASSERT_TRUE(settle(w));
  const int64_t after_first = fake_method_mask_runs();
  for (const auto& names : std::vector<std::vector<std::string>>{{"quest"}, {"hip", "streaming"}, {"streaming", "quest", "vslash"}}) {
    Request s = base_request(names);
    s.head = 1;
    w.submit(s);
    const auto snap = settle(w);
    ASSERT_TRUE(snap && snap->fresh(kStageMethodMasks));
    ASSERT_EQ(snap->method_masks->methods.size(), names.size());
    EXPECT_EQ(fake_method_mask_runs(), after_first) << "a method already computed for this layer and run";
  }
  r.layer = 2;
  w.submit(r);
  auto snap = settle(w);
  ASSERT_TRUE(snap && snap->fresh(kStageMethodMasks));
  EXPECT_EQ(fake_method_mask_runs(), after_first + 3) << "a new layer: each method once";
  for (const MethodMaskView& v : snap->method_masks->methods) expect_reference(*snap, v);
  r.hip.hip.k = 64;  // a new run
  for (auto& c : r.compare_methods) c.values = hm::resolve_values(hm::find_selection_method(c.name), {}, r.hip.hip);
  w.submit(r);
  snap = settle(w);
  ASSERT_TRUE(snap && snap->fresh(kStageMethodMasks));
  EXPECT_EQ(fake_method_mask_runs(), after_first + 6) << "a new run: each method again";
  for (const MethodMaskView& v : snap->method_masks->methods) expect_reference(*snap, v);
}

TEST(MethodMasksStage, AMethodTheKnobsRefuseFailsAloneAndNoMethodIsAnEmptyView) {
  Worker w;
  Request r = base_request({"streaming"});
  r.compare_methods.push_back({"quest", {{"quest_page", 5}}});  // not a multiple of b_k
  w.submit(r);
  auto snap = settle(w);
  ASSERT_TRUE(snap && snap->fresh(kStageMethodMasks)) << snap->error[kStageMethodMasks];
  ASSERT_EQ(snap->method_masks->methods.size(), 2u);
  EXPECT_TRUE(snap->method_masks->methods[0].masks);
  EXPECT_FALSE(snap->method_masks->methods[1].masks);
  EXPECT_NE(snap->method_masks->methods[1].error.find("quest_page"), std::string::npos) << snap->method_masks->methods[1].error;
  r.compare_methods.clear();
  w.submit(r);
  snap = settle(w);
  ASSERT_TRUE(snap && snap->fresh(kStageMethodMasks));
  EXPECT_TRUE(snap->method_masks->methods.empty());
}

TEST(MethodMasksStage, ComparedMethodsAreInTheStageKey) {
  Request a = base_request({"hip", "quest"});
  Request b = a;
  EXPECT_EQ(stage_key(kStageMethodMasks, a), stage_key(kStageMethodMasks, b));
  b.head = 1;
  EXPECT_EQ(stage_key(kStageMethodMasks, a), stage_key(kStageMethodMasks, b)) << "a head is drawn, not computed";
  b = base_request({"hip", "streaming"});
  EXPECT_NE(stage_key(kStageMethodMasks, a), stage_key(kStageMethodMasks, b));
  b = a;
  b.compare_methods[1].values["quest_page"] = 32;
  EXPECT_NE(stage_key(kStageMethodMasks, a), stage_key(kStageMethodMasks, b));
  b = a;
  b.layer = 2;
  EXPECT_NE(stage_key(kStageMethodMasks, a), stage_key(kStageMethodMasks, b));
}

}  // namespace
}  // namespace hipstudio::gui
