// Sliders at length (a change recomputes only what it invalidates): the
// dense-probability image and the locality histograms read nothing but the viewed layer's inputs.
// At or below the first HiP layer those are the dense layers' output, so a HiP setting keeps them
// (the same result objects, no re-run); above it the HiP layers before it change them, so they run
// again.
#include <gtest/gtest.h>

#include "app/gui/worker.h"
#include "tests/gui/worker/fake_engine_jobs.h"
#include "tests/gui/worker/worker_settle.h"

namespace hipstudio::gui {
namespace {

Request base_request() {
  Request r;
  r.model.path = "fake";
  r.prompt = "fake prompt for input-only views";
  r.hip.hip.k = 32;
  r.hip.hip.b_q = 8;
  r.hip.hip.b_k = 2;
  r.hip.dense_layers = 0;
  r.decode_steps = 4;
  return r;
}

TEST(InputOnlyViews, KeyFollowsHipSettingsOnlyAboveTheFirstHipLayer) {
  Request a = base_request();
  a.hip.dense_layers = 3;
  Request b = a;
  b.hip.hip.k = 64;
  for (int64_t layer : {0, 2, 3}) {
    a.layer = b.layer = layer;
    EXPECT_EQ(stage_key(kStageDense, a), stage_key(kStageDense, b)) << "layer " << layer;
    EXPECT_EQ(stage_key(kStageLocality, a), stage_key(kStageLocality, b)) << "layer " << layer;
    EXPECT_NE(stage_key(kStageMasks, a), stage_key(kStageMasks, b)) << "layer " << layer;
  }
  a.layer = b.layer = 4;  // reads layer 3, a HiP layer
  EXPECT_NE(stage_key(kStageDense, a), stage_key(kStageDense, b));
  EXPECT_NE(stage_key(kStageLocality, a), stage_key(kStageLocality, b));
  // l_d itself: layer 3 stays below the first HiP layer for l_d 3 and 5, not for l_d 2.
  a.layer = b.layer = 3;
  b.hip.hip.k = a.hip.hip.k;
  b.hip.dense_layers = 5;
  EXPECT_EQ(stage_key(kStageDense, a), stage_key(kStageDense, b));
  b.hip.dense_layers = 2;
  EXPECT_NE(stage_key(kStageDense, a), stage_key(kStageDense, b));
  // The prompt decides the inputs everywhere.
  b = a;
  b.prompt += " more";
  EXPECT_NE(stage_key(kStageDense, a), stage_key(kStageDense, b));
  EXPECT_NE(stage_key(kStageLocality, a), stage_key(kStageLocality, b));
}

TEST(InputOnlyViews, AHipChangeKeepsThemBelowTheFirstHipLayerAndRerunsThemAbove) {
  Worker w;
  Request r = base_request();  // layer 0, l_d 0: layer 0 reads the embeddings
  w.submit(r);
  const auto first = settle(w);
  ASSERT_TRUE(first && first->analysis && first->dense && first->locality && first->masks);

  r.hip.hip.k = 64;
  w.submit(r);
  const auto k = settle(w);
  ASSERT_TRUE(k && k->masks);
  EXPECT_NE(k->analysis, first->analysis) << "a k change ran no analysis";
  EXPECT_NE(k->masks, first->masks);
  EXPECT_EQ(k->dense, first->dense) << "the dense image re-ran though its inputs did not change";
  EXPECT_EQ(k->locality, first->locality) << "the locality re-ran though its inputs did not change";
  EXPECT_TRUE(k->fresh(kStageDense) && k->fresh(kStageLocality));

  // Layer 1 with l_d 0 reads layer 0, a HiP layer: its views follow the HiP settings. (The fake
  // analysis has one layer, so the views are layer 0's, but the request's keys are layer 1's.)
  r.layer = 1;
  w.submit(r);
  const auto above = settle(w);
  ASSERT_TRUE(above);
  r.hip.hip.k = 32;
  w.submit(r);
  const auto k_above = settle(w);
  ASSERT_TRUE(k_above && k_above->dense && k_above->locality);
  EXPECT_NE(k_above->dense, above->dense) << "a HiP change kept views whose inputs it changes";
  EXPECT_NE(k_above->locality, above->locality);
  EXPECT_TRUE(k_above->fresh(kStageDense) && k_above->fresh(kStageLocality));
}

}  // namespace
}  // namespace hipstudio::gui
