// decode_batch's layer timer (bench model --batch's breakdown run) on the CPU: the logits do not
// change by a bit, dense and HiP, and every layer of every step is timed.
#include <memory>

#include <gtest/gtest.h>

#include "engine/backends/hip_attention.h"
#include "tests/engine/batch_timer_check.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

TEST(BatchedDecodeTimer, DenseLogitsAreUnchangedAndEveryLayerIsTimed) {
  testing::expect_timer_leaves_logits_unchanged(testing::default_model(), 5,
                                                [] { return std::make_unique<DenseAttention>(); });
}

TEST(BatchedDecodeTimer, HipLogitsAreUnchangedAndEveryLayerIsTimed) {
  const auto model = testing::default_model();
  const HipModelParams params = testing::small_hip_params();
  testing::expect_timer_leaves_logits_unchanged(model, 5, [&]() -> std::unique_ptr<AttentionBackend> {
    return std::make_unique<HipAttention>(params, model->config.n_layers);
  });
}

}  // namespace
}  // namespace hipstudio
