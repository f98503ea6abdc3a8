// The Cache panel's offloading replay (compute_offload): it runs one bank size at a time so the
// worker's stage can give way between them; the curves equal one replay over all sizes, and a
// checkpoint that throws stops it.
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

#include "app/gui/worker.h"
#include "engine/offload/offload_simulator.h"

namespace hipstudio::gui {
namespace {

std::shared_ptr<AnalysisView> analysis_with_streams() {
  auto pa = std::make_shared<PairedAnalysis>();
  pa->options.hip.hip.k = 16;
  pa->options.hip.hip.b_sk = 1;
  const int64_t prompt = 200, steps = 6;
  pa->prompt_ids.assign(prompt, 0);
  pa->decode.resize(steps);
  AccessStreams& a = pa->access;
  a.steps = steps, a.layers = 2, a.heads = 3, a.first_layer = 1;
  std::mt19937 rng(7);
  for (int64_t s = 0; s < steps; ++s)
    for (int64_t i = 0; i < a.layers * a.heads; ++i)
      for (auto* keys : {&a.mask_keys, &a.sparse_keys}) {
        std::vector<int32_t> k;
        for (int32_t p = 0; p < prompt + s; ++p)
          if (rng() % 5 == 0) k.push_back(p);
        keys->push_back(k);
      }
  auto view = std::make_shared<AnalysisView>();
  view->analysis = pa;
  view->model.head_dim = 8;
  view->model.element_bytes = 2;
  return view;
}

TEST(OffloadStage, CurvesEqualOneReplayOverAllSizes) {
  const auto view = analysis_with_streams();
  Request r;
  r.cache_factor = 2.0;
  int checkpoints = 0;
  const auto o = compute_offload(*view, r, [&] { ++checkpoints; });
  std::vector<int64_t> sizes;
  for (const auto& p : o->mask_curve) sizes.push_back(p.bank_tokens);
  ASSERT_GE(sizes.size(), 5u);
  EXPECT_GE(checkpoints, static_cast<int>(2 * sizes.size())) << "a checkpoint before every replay";
  const auto& access = view->analysis->access;
  const auto mask = offload::hit_ratio_curve(access, o->config, offload::OffloadContext::Mask, sizes);
  const auto sparse = offload::hit_ratio_curve(access, o->config, offload::OffloadContext::Sparse, sizes);
  ASSERT_EQ(o->mask_curve.size(), mask.size());
  ASSERT_EQ(o->sparse_curve.size(), sparse.size());
  for (size_t i = 0; i < mask.size(); ++i) {
    EXPECT_EQ(o->mask_curve[i].bank_tokens, mask[i].bank_tokens);
    EXPECT_EQ(o->mask_curve[i].hit_ratio, mask[i].hit_ratio);
    EXPECT_EQ(o->sparse_curve[i].hit_ratio, sparse[i].hit_ratio);
  }
}

TEST(OffloadStage, AThrowingCheckpointStopsTheReplay) {
  const auto view = analysis_with_streams();
  Request r;
  int checkpoints = 0;
  EXPECT_THROW(compute_offload(*view, r,
                               [&] {
                                 if (++checkpoints == 4) throw std::runtime_error("give way");
                               }),
               std::runtime_error);
  EXPECT_EQ(checkpoints, 4);
}

}  // namespace
}  // namespace hipstudio::gui
