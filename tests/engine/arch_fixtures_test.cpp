// Every architecture fixture (arch_fixture_cases.h) on the CPU against transformers: float32 logits
// of the whole sequence within 1e-4, 32 greedy tokens identical through the KV cache's decode path,
// chunked prefill equal to one pass, bf16 NLL as close to float32's as transformers' bf16 is, and HiP with a budget covering
// the context equal to dense (HiP replacing only the full-attention layers).
#include <gtest/gtest.h>

#include "engine/backends/hip_attention.h"
#include "tests/engine/arch_fixture_cases.h"

namespace hipstudio {
namespace {

using testing::ArchFixture;

class ArchFixtureCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchFixtureCpu, Float32LogitsMatchTransformers) {
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cpu", "f32");
  DenseAttention dense;
  const at::Tensor logits = testing::arch_prompt_logits(model, f.ids, dense);
  ASSERT_EQ(logits.sizes(), f.logits.sizes());
  EXPECT_LE((logits - f.logits).abs().max().item<double>(), 1e-4) << f.name;
  EXPECT_LE(testing::max_abs_diff(testing::arch_nll(logits, f.ids), f.nll_f32), 1e-4) << f.name;
}

TEST_P(ArchFixtureCpu, ChunkedPrefillEqualsOnePass) {
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cpu", "f32");
  DenseAttention dense;
  const at::Tensor one = testing::arch_prompt_logits(model, f.ids, dense);
  // 40-token chunks: each later chunk starts inside the previous chunk's window (W = 24 here).
  const at::Tensor chunked = testing::arch_prompt_logits(model, f.ids, dense, 40);
  EXPECT_LE((one - chunked).abs().max().item<double>(), 1e-5) << f.name;
}

TEST_P(ArchFixtureCpu, GreedyDecodeThroughTheCacheMatchesTransformers) {
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cpu", "f32");
  DenseAttention dense;
  const int64_t steps = static_cast<int64_t>(f.greedy.size()), prompt = static_cast<int64_t>(f.greedy_prompt.size());
  const std::vector<int32_t> cached = testing::arch_greedy(model, f.greedy_prompt, steps, dense);
  if (testing::arch_rope_depends_on_length(model->config, prompt, prompt + steps)) {
    // transformers switched longrope factors mid-run: its recompute is reproduced by ours, and the
    // cache's steps equal a recompute with the cache's one table.
    EXPECT_EQ(testing::arch_greedy_recompute(model, f.greedy_prompt, steps, dense), f.greedy) << f.name;
    EXPECT_EQ(cached, testing::arch_greedy_recompute(model, f.greedy_prompt, steps, dense, prompt + steps)) << f.name;
  } else {
    EXPECT_EQ(cached, f.greedy) << f.name;
  }
}

TEST_P(ArchFixtureCpu, DecodeStepsMatchTransformersLogits) {
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cpu", "f32");
  DenseAttention dense;
  // 48 positions prefilled, the other 48 one decode step each (past the window of 24).
  const at::Tensor logits = testing::arch_decode_logits(model, f.ids, 48, dense);
  EXPECT_LE((logits - f.logits).abs().max().item<double>(), 1e-4) << f.name;
}

TEST_P(ArchFixtureCpu, BatchedDecodeStepsEqualSingleSequenceSteps) {
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  EXPECT_LE(testing::arch_batched_decode_gap(testing::load_arch_fixture_model(f, "cpu", "f32"), f), 1e-5) << f.name;
}

TEST_P(ArchFixtureCpu, Bfloat16NllWithinBf16Rounding) {
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cpu", "bf16");
  DenseAttention dense;
  const std::vector<double> nll = testing::arch_nll(testing::arch_prompt_logits(model, f.ids, dense), f.ids);
  EXPECT_LE(testing::max_abs_diff(nll, f.nll_f32), testing::bf16_nll_bound(f)) << f.name;
}

TEST_P(ArchFixtureCpu, HipWithBudgetCoveringTheContextEqualsDense) {
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cpu", "f32");
  HipModelParams p;
  p.hip.k = 128;  // >= the 96 positions: every block is selected
  p.hip.b_q = 8;
  p.hip.b_k = 2;
  p.dense_layers = 0;
  HipAttention hip(p, model->config.n_layers);
  int64_t hip_calls = 0, dense_calls = 0;
  hip.set_observer([&](const HipLayerEvent& e) {
    (e.dense ? dense_calls : hip_calls) += 1;
    // A windowed layer keeps its window attention; HiP takes the full-attention layers.
    EXPECT_EQ(e.dense, model->config.window(e.layer) > 0) << f.name << " layer " << e.layer;
  });
  DenseAttention dense;
  const at::Tensor d = testing::arch_prompt_logits(model, f.ids, dense, 32);
  const at::Tensor h = testing::arch_prompt_logits(model, f.ids, hip, 32);
  EXPECT_LE((d - h).abs().max().item<double>(), 1e-5) << f.name;
  EXPECT_EQ(hip_calls, 3 * model->config.full_attention_layers()) << f.name;
  EXPECT_EQ(hip_calls + dense_calls, 3 * model->config.n_layers) << f.name;
  // The cache's decode steps too (cached masks, dense tail).
  EXPECT_EQ(testing::arch_greedy(model, f.greedy_prompt, 8, hip), testing::arch_greedy(model, f.greedy_prompt, 8, dense))
      << f.name;
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
