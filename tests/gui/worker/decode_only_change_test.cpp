// Sliders at length (changing r_m must not re-run both prefills): r_m and the
// decode steps re-run only the decode half on the kept prefill; the layer views stay the same
// objects; a prefill setting (k) runs the prefill again.
#include <gtest/gtest.h>

#include "app/gui/worker.h"
#include "tests/gui/worker/fake_engine_jobs.h"
#include "tests/gui/worker/worker_settle.h"

namespace hipstudio::gui {
namespace {

Request base_request() {
  Request r;
  r.model.path = "fake";
  r.prompt = "fake prompt";
  r.hip.hip.k = 32;
  r.hip.hip.b_q = 8;
  r.hip.hip.b_k = 2;
  r.hip.dense_layers = 0;
  r.hip.refresh_every = 4;
  r.decode_steps = 6;
  return r;
}

TEST(DecodeOnlyChange, RmAndDecodeStepsKeepThePrefillAndTheViews) {
  Worker w;
  Request r = base_request();
  w.submit(r);
  const auto first = settle(w);
  ASSERT_TRUE(first && first->analysis && first->masks);
  for (int st = 0; st < kStageCount; ++st)
    if (!stage_on_request(st)) {
      ASSERT_TRUE(first->fresh(st)) << stage_name(st);
    }
  const int64_t prefills = fake_prefill_runs();

  r.hip.refresh_every = 2;
  w.submit(r);
  const auto rm = settle(w);
  ASSERT_TRUE(rm);
  EXPECT_EQ(fake_prefill_runs(), prefills) << "an r_m change ran a prefill";
  EXPECT_EQ(rm->masks, first->masks) << "an r_m change recomputed the masks";
  EXPECT_EQ(rm->dense, first->dense);
  EXPECT_EQ(rm->analysis->prefill_identity(), first->analysis->prefill_identity());
  EXPECT_NE(rm->analysis, first->analysis);
  EXPECT_EQ(rm->analysis->analysis->options.hip.refresh_every, 2);
  EXPECT_TRUE(rm->fresh(kStageDecode) && rm->fresh(kStageOffload));
  // The latency history gets the run, marked as measuring no new prefill.
  ASSERT_TRUE(first->latency_history && rm->latency_history);
  ASSERT_EQ(rm->latency_history->size(), first->latency_history->size() + 1);
  EXPECT_TRUE(first->latency_history->back().new_prefill);
  EXPECT_FALSE(rm->latency_history->back().new_prefill);
  EXPECT_EQ(rm->latency_history->back().refresh_every, 2);

  r.decode_steps = 9;
  w.submit(r);
  const auto steps = settle(w);
  ASSERT_TRUE(steps);
  EXPECT_EQ(fake_prefill_runs(), prefills) << "a decode-steps change ran a prefill";
  EXPECT_EQ(steps->masks, first->masks);
  EXPECT_EQ(steps->analysis->analysis->options.decode_steps, 9);

  // Steps typed past the slider's range (Ctrl+click) need caches with more room: a new prefill.
  r.decode_steps = kGuiDecodeRoom + 10;
  w.submit(r);
  const auto past = settle(w);
  ASSERT_TRUE(past);
  EXPECT_EQ(fake_prefill_runs(), prefills + 1);
  EXPECT_TRUE(past->fresh(kStageAnalysis) && past->fresh(kStageDecode));
  r.decode_steps = 9;  // back within the room: the prefill planned with more room is not the key's
  w.submit(r);
  ASSERT_TRUE(settle(w));
  EXPECT_EQ(fake_prefill_runs(), prefills + 2);

  r.hip.hip.k = 64;  // a prefill setting
  w.submit(r);
  const auto k = settle(w);
  ASSERT_TRUE(k);
  EXPECT_EQ(fake_prefill_runs(), prefills + 3);
  EXPECT_NE(k->analysis->prefill_identity(), first->analysis->prefill_identity());
  EXPECT_NE(k->masks, first->masks);
  EXPECT_EQ(k->masks->params.k, 64);
  EXPECT_TRUE(k->latency_history->back().new_prefill);
}

}  // namespace
}  // namespace hipstudio::gui
