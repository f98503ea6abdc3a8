// Every architecture fixture (arch_fixture_cases.h) on the CPU against transformers, through the
// checks both backends share (arch_fixture_checks.h, the CPU's row): float32 logits of the whole
// sequence within 1e-4, 32 greedy tokens identical through the KV cache's decode path, chunked
// prefill equal to one pass, bf16 NLL as close to float32's as transformers' bf16 is, and HiP with a
// budget covering the context equal to dense (HiP replacing only the full-attention layers).
#include <gtest/gtest.h>

#include "engine/backends/hip_attention.h"
#include "tests/engine/arch_fixture_checks.h"

namespace hipstudio {
namespace {

using testing::ArchFixture;

class ArchFixtureCpu : public ::testing::TestWithParam<std::string> {
 protected:
  ArchFixture fixture() const { return testing::read_arch_fixture(GetParam()); }
  const testing::ArchDevice device = testing::cpu_arch_device();
};

TEST_P(ArchFixtureCpu, Float32PrefillMatchesTransformers) { testing::check_float32_prefill(fixture(), device); }
TEST_P(ArchFixtureCpu, DecodeStepsMatchTransformersLogits) { testing::check_float32_decode(fixture(), device); }
TEST_P(ArchFixtureCpu, GreedyDecodeThroughTheCacheMatchesTransformers) { testing::check_float32_greedy(fixture(), device); }
TEST_P(ArchFixtureCpu, BatchedDecodeStepsEqualSingleSequenceSteps) { testing::check_batched_decode(fixture(), device); }
TEST_P(ArchFixtureCpu, Bfloat16NllWithinBf16Rounding) { testing::check_half_precision_nll(fixture(), device); }
TEST_P(ArchFixtureCpu, HipWithBudgetCoveringTheContextEqualsDense) {
  testing::check_hip_covering_budget_equals_dense(fixture(), device);
}

TEST(ArchFixtures, EveryVariantIsThere) {
  EXPECT_EQ(testing::arch_fixture_names().size(), 18u) << testing::arch_fixture_root();
}

TEST(ArchFixtures, LdCountsFullAttentionLayers) {
  ModelConfig c;
  c.n_layers = 6;
  c.layer_window = {24, 0, 24, 0, 24, 0};
  EXPECT_FALSE(hip_replaces_layer(c, 1, 0));  // windowed
  EXPECT_FALSE(hip_replaces_layer(c, 1, 1));  // the first full-attention layer: dense under l_d 1
  EXPECT_FALSE(hip_replaces_layer(c, 1, 2));
  EXPECT_TRUE(hip_replaces_layer(c, 1, 3));
  EXPECT_TRUE(hip_replaces_layer(c, 1, 5));
  EXPECT_EQ(first_hip_layer(c, 1), 3);
  EXPECT_EQ(first_hip_layer(c, 3), 6);  // l_d covers every full-attention layer: HiP replaces none
  c.layer_window.clear();  // every layer full: l_d counts layers
  EXPECT_EQ(first_hip_layer(c, 2), 2);
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchFixtureCpu, ::testing::ValuesIn(testing::arch_fixture_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace hipstudio
