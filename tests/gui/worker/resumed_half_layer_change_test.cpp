// The viewed layer first, in the worker (the layered fake of fake_engine_jobs.cpp: a prefill that
// stops after the viewed layer and a 'HiP layers' stage that runs the rest): the viewed layer's masks
// are on screen while the layers above still run; a layer change during that resumed half shows the
// new layer (at once below where the prefill stopped, after the rest above it) without a new prefill,
// and the rest completes; the results equal those of a prefill that ran whole.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "app/gui/worker.h"
#include "tests/gui/worker/fake_engine_jobs.h"
#include "tests/gui/worker/worker_settle.h"

namespace hipstudio::gui {
namespace {

Request layered_request(int64_t layer) {
  Request r;
  r.model.path = "fake";
  r.prompt = std::string(kFakeLayeredPrompt) + " prompt";
  r.hip.hip.k = 32;
  r.hip.hip.b_q = 8;
  r.hip.hip.b_k = 2;
  r.hip.dense_layers = 0;
  r.layer = layer;
  return r;
}

// Polls the snapshots until `ok` holds for one (null after 30 s).
std::shared_ptr<const Snapshot> wait_for(const Worker& w, const std::function<bool(const Snapshot&)>& ok) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    auto s = w.snapshot();
    if (ok(*s)) return s;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) return nullptr;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

bool masks_of(const Snapshot& s, int64_t layer) { return s.masks && s.masks->layer == layer && s.fresh(kStageMasks); }
bool rest_running(const Snapshot& s) { return s.busy && s.running_stage == kStageHipRest; }

// The masks on screen equal those of the whole fake run's layer.
void expect_whole_run_masks(const Snapshot& s, const Request& r) {
  ASSERT_TRUE(s.masks);
  const auto whole = fake_layered_analysis(r);
  const auto want = compute_layer_masks(whole, clamp_selection(*whole, r));
  EXPECT_EQ(s.masks->hip.blocks, want->hip.blocks);
  EXPECT_EQ(s.masks->hip.counts, want->hip.counts);
  EXPECT_EQ(s.masks->recall, want->recall);
}

void expect_all_fresh(const Snapshot& s) {
  for (int st = 0; st < kStageCount; ++st)
    if (!stage_on_request(st)) {  // none asked
      EXPECT_TRUE(s.fresh(st)) << stage_name(st) << ": " << s.error[st];
    }
  ASSERT_TRUE(s.analysis);
  EXPECT_FALSE(s.analysis->analysis->hip_partial()) << "the rest of the layers never ran";
  EXPECT_EQ(static_cast<int64_t>(s.analysis->analysis->inputs.size()), kFakeLayers);
}

TEST(ResumedHalfLayerChange, ALayerBelowTheStopShowsAtOnceAndTheRestRunsAgain) {
  Worker w;
  w.submit(layered_request(1));
  // The viewed layer's masks while the layers above run.
  const auto first = wait_for(w, [](const Snapshot& s) { return masks_of(s, 1) && rest_running(s); });
  ASSERT_TRUE(first) << "the viewed layer's masks never showed while the rest ran";
  ASSERT_TRUE(first->analysis->analysis->hip_partial());
  EXPECT_EQ(first->analysis->analysis->hip_through_layer, 1);
  const int64_t prefills = fake_prefill_runs(), rests = fake_rest_runs(), completed = fake_rest_completed();

  const Request lower = layered_request(0);
  w.submit(lower);
  const auto shown = wait_for(w, [](const Snapshot& s) { return masks_of(s, 0); });
  ASSERT_TRUE(shown);
  EXPECT_TRUE(shown->analysis->analysis->hip_partial()) << "layer 0 waited for the layers above the stop";
  expect_whole_run_masks(*shown, lower);
  const auto done = settle(w);
  ASSERT_TRUE(done);
  expect_all_fresh(*done);
  expect_whole_run_masks(*done, lower);
  EXPECT_EQ(fake_prefill_runs(), prefills) << "a layer change ran a prefill";
  EXPECT_GE(fake_rest_runs(), rests + 1) << "the interrupted rest did not run again";
  EXPECT_EQ(fake_rest_completed(), completed + 1);
}

TEST(ResumedHalfLayerChange, ALayerAboveTheStopWaitsForTheRestOnly) {
  Worker w;
  w.submit(layered_request(0));
  ASSERT_TRUE(wait_for(w, [](const Snapshot& s) { return masks_of(s, 0) && rest_running(s); }));
  const int64_t prefills = fake_prefill_runs(), completed = fake_rest_completed();
  const Request upper = layered_request(kFakeLayers - 1);
  w.submit(upper);
  const auto shown = wait_for(w, [](const Snapshot& s) { return masks_of(s, kFakeLayers - 1); });
  ASSERT_TRUE(shown);
  EXPECT_FALSE(shown->analysis->analysis->hip_partial()) << "masks of a layer the prefill has not reached";
  expect_whole_run_masks(*shown, upper);
  const auto done = settle(w);
  ASSERT_TRUE(done);
  expect_all_fresh(*done);
  EXPECT_EQ(fake_prefill_runs(), prefills) << "a layer change ran a prefill";
  EXPECT_EQ(fake_rest_completed(), completed + 1) << "the rest ran more than once to completion";
}

// A new k during the resumed half: the HiP side runs again (a prefill run of the fake), stops after
// the viewed layer again, and its rest completes; nothing of the old settings stays on screen.
TEST(ResumedHalfLayerChange, AKChangeRestartsTheStreamedPrefill) {
  Worker w;
  w.submit(layered_request(1));
  ASSERT_TRUE(wait_for(w, [](const Snapshot& s) { return masks_of(s, 1) && rest_running(s); }));
  const int64_t prefills = fake_prefill_runs();
  Request other = layered_request(2);
  other.hip.hip.k = 64;
  w.submit(other);
  const auto done = settle(w);
  ASSERT_TRUE(done);
  expect_all_fresh(*done);
  EXPECT_EQ(fake_prefill_runs(), prefills + 1);
  EXPECT_EQ(done->masks->params.k, 64);
  EXPECT_EQ(done->analysis->analysis->options.hip.hip.k, 64);
  expect_whole_run_masks(*done, other);
}

}  // namespace
}  // namespace hipstudio::gui
