// The architecture fixtures' table of cases (tests/engine/arch_fixture_cases.h) on CUDA: float32
// logits within 1e-4 of transformers' (prefill and the decode path, eager and through the decode
// graphs), NLL within 1e-3, greedy tokens identical; bf16 and f16 NLL within their rounding, on
// the prefill and on the decode graphs; HiP with a budget covering the context equal to dense.
// HIPSTUDIO_ARCH_FIXTURES points the suite at freshly generated checkpoints.
#include <gtest/gtest.h>

#include "engine/backends/hip_attention.h"
#include "tests/engine/arch_fixture_cases.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

using testing::ArchFixture;

class ArchFixtureCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchFixtureCuda, Float32MatchesTransformers) {
  REQUIRE_CUDA_KERNELS();
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cuda", "f32");
  DenseAttention dense;
  const at::Tensor logits = testing::arch_prompt_logits(model, f.ids, dense);
  EXPECT_LE((logits - f.logits).abs().max().item<double>(), 1e-4) << f.name;
  EXPECT_LE(testing::max_abs_diff(testing::arch_nll(logits, f.ids), f.nll_f32), 1e-3) << f.name;
  EXPECT_LE((testing::arch_prompt_logits(model, f.ids, dense, 40) - f.logits).abs().max().item<double>(), 1e-4)
      << f.name << ": chunked prefill";
  for (const bool graphs : {false, true}) {
    const at::Tensor decoded = testing::arch_decode_logits(model, f.ids, 48, dense, graphs);
    EXPECT_LE((decoded - f.logits).abs().max().item<double>(), 1e-4) << f.name << (graphs ? ": graphs" : ": eager");
  }
}

TEST_P(ArchFixtureCuda, Float32GreedyMatchesTransformers) {
  REQUIRE_CUDA_KERNELS();
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cuda", "f32");
  DenseAttention dense;
  const int64_t steps = static_cast<int64_t>(f.greedy.size()), prompt = static_cast<int64_t>(f.greedy_prompt.size());
  for (const bool graphs : {false, true}) {
    const std::vector<int32_t> cached = testing::arch_greedy(model, f.greedy_prompt, steps, dense, graphs);
    if (testing::arch_rope_depends_on_length(model->config, prompt, prompt + steps))
      EXPECT_EQ(cached, testing::arch_greedy_recompute(model, f.greedy_prompt, steps, dense, prompt + steps)) << f.name;
    else
      EXPECT_EQ(cached, f.greedy) << f.name << (graphs ? ": graphs" : ": eager");
  }
}

// Batched decode (one matrix product over both rows) against batch-1 steps; float32 on CUDA.
TEST_P(ArchFixtureCuda, BatchedDecodeStepsEqualSingleSequenceSteps) {
  REQUIRE_CUDA_KERNELS();
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  EXPECT_LE(testing::arch_batched_decode_gap(testing::load_arch_fixture_model(f, "cuda", "f32"), f), 1e-4) << f.name;
}

// bf16 and f16 NLL against transformers' float32 NLL, within testing::bf16_nll_bound (2.5 times
// transformers' own bf16 distance: the fused kernels round at other points than the CPU's ops; f16,
// 3 mantissa bits finer, sits well inside it). Prefill and the
// decode graphs' steps.
TEST_P(ArchFixtureCuda, HalfPrecisionNllWithinRounding) {
  REQUIRE_CUDA_KERNELS();
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  for (const char* dtype : {"bf16", "f16"}) {
    const auto model = testing::load_arch_fixture_model(f, "cuda", dtype);
    DenseAttention dense;
    const std::vector<double> prefill = testing::arch_nll(testing::arch_prompt_logits(model, f.ids, dense), f.ids);
    EXPECT_LE(testing::max_abs_diff(prefill, f.nll_f32), testing::bf16_nll_bound(f, 2.5)) << f.name << " " << dtype;
    const std::vector<double> decoded = testing::arch_nll(testing::arch_decode_logits(model, f.ids, 48, dense), f.ids);
    EXPECT_LE(testing::max_abs_diff(decoded, f.nll_f32), testing::bf16_nll_bound(f, 2.5))
        << f.name << " " << dtype << ": decode graphs";
  }
}

TEST_P(ArchFixtureCuda, HipWithBudgetCoveringTheContextEqualsDense) {
  REQUIRE_CUDA_KERNELS();
  const ArchFixture f = testing::read_arch_fixture(GetParam());
  const auto model = testing::load_arch_fixture_model(f, "cuda", "f32");
  HipModelParams p;
  p.hip.k = 128;  // >= the 96 positions: every block is selected
  p.hip.b_q = 8;
  p.hip.b_k = 2;
  p.dense_layers = 0;
  HipAttention hip(p, model->config.n_layers);
  hip.set_observer([&](const HipLayerEvent& e) {
    EXPECT_EQ(e.dense, model->config.window(e.layer) > 0) << f.name << " layer " << e.layer;
  });
  DenseAttention dense;
  const at::Tensor d = testing::arch_prompt_logits(model, f.ids, dense, 32);
  const at::Tensor h = testing::arch_prompt_logits(model, f.ids, hip, 32);
  EXPECT_LE((d - h).abs().max().item<double>(), 1e-4) << f.name << " (" << hip.backend_note() << ")";
  hip.set_observer({});  // the decode steps through the graphs where the model's maths allows them
  const at::Tensor hd = testing::arch_decode_logits(model, f.ids, 48, hip);
  const at::Tensor dd = testing::arch_decode_logits(model, f.ids, 48, dense);
  EXPECT_LE((dd - hd).abs().max().item<double>(), 1e-4) << f.name << ": decode";
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchFixtureCuda, ::testing::ValuesIn(testing::arch_fixture_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace hipstudio
