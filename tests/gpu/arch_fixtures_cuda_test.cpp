// The architecture fixtures' checks (tests/engine/arch_fixture_checks.h, the CUDA row) on CUDA: float32
// logits within 1e-4 of transformers' (prefill and the decode path, eager and through the decode
// graphs), NLL within 1e-3, greedy tokens identical; bf16 and f16 NLL within their rounding, on
// the prefill and on the decode graphs; HiP with a budget covering the context equal to dense.
// HIPSTUDIO_ARCH_FIXTURES points the suite at freshly generated checkpoints.
#include <gtest/gtest.h>

#include "tests/engine/arch_fixture_checks.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

using testing::ArchFixture;

class ArchFixtureCuda : public ::testing::TestWithParam<std::string> {
 protected:
  ArchFixture fixture() const { return testing::read_arch_fixture(GetParam()); }
  const testing::ArchDevice device = testing::cuda_arch_device();
};

TEST_P(ArchFixtureCuda, Float32MatchesTransformers) {
  REQUIRE_CUDA_KERNELS();
  testing::check_float32_prefill(fixture(), device);
  testing::check_float32_decode(fixture(), device);
}

TEST_P(ArchFixtureCuda, Float32GreedyMatchesTransformers) {
  REQUIRE_CUDA_KERNELS();
  testing::check_float32_greedy(fixture(), device);
}

// Batched decode (one matrix product over both rows) against batch-1 steps; float32 on CUDA.
TEST_P(ArchFixtureCuda, BatchedDecodeStepsEqualSingleSequenceSteps) {
  REQUIRE_CUDA_KERNELS();
  testing::check_batched_decode(fixture(), device);
}

// bf16 and f16 NLL against transformers' float32 NLL, prefill and the decode graphs' steps.
TEST_P(ArchFixtureCuda, HalfPrecisionNllWithinRounding) {
  REQUIRE_CUDA_KERNELS();
  testing::check_half_precision_nll(fixture(), device);
}

TEST_P(ArchFixtureCuda, HipWithBudgetCoveringTheContextEqualsDense) {
  REQUIRE_CUDA_KERNELS();
  testing::check_hip_covering_budget_equals_dense(fixture(), device);
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchFixtureCuda, ::testing::ValuesIn(testing::arch_fixture_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace hipstudio
