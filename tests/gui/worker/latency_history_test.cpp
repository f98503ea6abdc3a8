// The Latency panel's history (every run adds its point):
// the worker records every paired run as it finishes, whatever panels are open, oldest first, and a
// change that re-runs no analysis (a new head) adds nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "app/gui/worker.h"
#include "tests/gui/worker/fake_engine_jobs.h"
#include "tests/gui/worker/worker_settle.h"

namespace hipstudio::gui {
namespace {

Request request_with_k(int64_t k, int64_t head) {
  Request r;
  r.model.path = "fake";
  r.prompt = "fake prompt";
  r.hip.hip.k = k;
  r.hip.hip.b_q = 8;
  r.hip.hip.b_k = 2;
  r.hip.dense_layers = 0;
  r.head = head;
  r.query_block = 1 << 20;
  return r;
}

TEST(LatencyHistory, EveryPairedRunIsKeptInOrderAndViewChangesAddNone) {
  Worker w;
  const int64_t ks[] = {16, 32, 64, 32, 16, 48, 64};
  for (int64_t k : ks) {
    w.submit(request_with_k(k, 0));
    ASSERT_TRUE(settle(w)) << "the worker never went idle";
  }
  w.submit(request_with_k(64, 1));  // another head: the analysis stays
  ASSERT_TRUE(settle(w)) << "the worker never went idle";
  const auto snap = w.snapshot();
  ASSERT_TRUE(snap->latency_history);
  ASSERT_EQ(snap->latency_history->size(), std::size(ks));
  for (size_t i = 0; i < std::size(ks); ++i) EXPECT_EQ((*snap->latency_history)[i].k, ks[i]) << "run " << i;
  // The newest sample is the shown analysis' numbers.
  const LatencySample expected = latency_sample(*snap->analysis->analysis);
  EXPECT_EQ(snap->latency_history->back().hip_ms, expected.hip_ms);
  EXPECT_EQ(snap->latency_history->back().dense_step_ms, expected.dense_step_ms);
}

}  // namespace
}  // namespace hipstudio::gui
