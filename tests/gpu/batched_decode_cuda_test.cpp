// The batched decode step on CUDA (label: gpu) against each sequence's own batch-1 decode (CUDA
// graphs, as generation runs it), dense and HiP, in float32 and bf16; and its layer timer (the
// breakdown run of bench model --batch) leaving the logits unchanged bit for bit. Skips with a
// message where no GPU exists.
#include <cstdio>
#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/model_source.h"
#include "engine/backends/hip_attention.h"
#include "tests/engine/batch_decode_check.h"
#include "tests/engine/batch_timer_check.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

constexpr int64_t kSteps = 10;  // with r_m = 4: refreshes and cached-mask steps both

void expect_batched_equals_alone(const char* dtype, bool hip) {
  auto model = load_model(resolve_model_source(""), parse_run_device("cuda", dtype));
  const HipModelParams params = testing::small_hip_params();
  const testing::MakeBackend make = [&]() -> std::unique_ptr<AttentionBackend> {
    if (hip) return std::make_unique<HipAttention>(params, model->config.n_layers);
    return std::make_unique<DenseAttention>();
  };
  const testing::BatchComparison c =
      testing::compare_batched_with_alone(model, testing::three_prompts(*model), kSteps, make);
  std::printf("[gpu] stories15M %s %s, batched decode of 3 sequences vs each alone: max abs logit diff %.3g, relative "
              "L2 %.3g, top-1 agreement %.3f over %lld steps\n",
              dtype, hip ? "HiP" : "dense", c.max_abs_diff(), c.relative_l2(), c.top1_agreement(),
              static_cast<long long>(kSteps));
  if (std::string(dtype) == "f32") {
    EXPECT_LE(c.max_abs_diff(), 1e-3) << (hip ? "HiP" : "dense");
  } else {
    // bf16: a matrix product over 3 rows may round differently from the one-row product it replaces,
    // and each layer's bf16 output carries that on; the logits stay close and the greedy tokens agree.
    EXPECT_LT(c.relative_l2(), 2e-2) << (hip ? "HiP" : "dense");
    EXPECT_GE(c.top1_agreement(), 0.9) << (hip ? "HiP" : "dense");
  }
}

TEST(BatchedDecodeCuda, DenseMatchesEachSequenceAlone) {
  if (!cuda_available())
    GTEST_SKIP() << "no CUDA: this LibTorch has no CUDA support or no GPU is visible; run the gpu-labelled tests on "
                    "a GPU machine (README: GPU build)";
  for (const char* dtype : {"f32", "bf16"}) expect_batched_equals_alone(dtype, /*hip=*/false);
}

TEST(BatchedDecodeCuda, HipMatchesEachSequenceAlone) {
  REQUIRE_CUDA_KERNELS();
  for (const char* dtype : {"f32", "bf16"}) expect_batched_equals_alone(dtype, /*hip=*/true);
}

// The batched step with every sequence's cache a slot of one storage (of its own capacity: the
// three prompts differ in length), attended in one call a layer (BatchLayout::kSlotsOneCall), against
// the same slots attended per sequence (kSlotsEachAlone: the same row-wise products over 3 rows)
// and against each sequence decoded alone, refreshes included (r_m 4 over 10 steps).
// HiP in float32: the sparse layers' one launch runs the SIMT kernel, which does not split a row's
// keys, and the l_d dense layers attend per sequence (flash takes bf16/f16 only), so the one-call
// step equals the per-sequence step bit for bit. bf16: flash (dense layers, the dense side) and the
// tensor-core kernel (HiP's) choose the split of each row's keys by the launch's size, so a
// sequence's softmax sums may be added in another order than in its own launch: within bf16
// rounding, carried through the layers.
void expect_one_call_matches(const char* dtype, bool hip) {
  auto model = load_model(resolve_model_source(""), parse_run_device("cuda", dtype));
  const HipModelParams params = testing::small_hip_params();
  const int64_t layers = model->config.n_layers;
  const testing::MakeBackend make = [&]() -> std::unique_ptr<AttentionBackend> {
    if (hip) return std::make_unique<HipAttention>(params, layers);
    return std::make_unique<DenseAttention>();
  };
  const auto prompts = testing::three_prompts(*model);
  const testing::BatchComparison one =
      testing::compare_batched_with_alone(model, prompts, kSteps, make, testing::BatchLayout::kSlotsOneCall);
  const testing::BatchComparison each =
      testing::compare_batched_with_alone(model, prompts, kSteps, make, testing::BatchLayout::kSlotsEachAlone);
  testing::BatchComparison one_vs_each{each.together, one.together, 0};
  const bool f32 = std::string(dtype) == "f32";
  std::printf("[gpu] stories15M %s %s, one attention call a layer for 3 sequences: %lld of %lld layers; vs per-sequence "
              "attention max abs %.3g (relative L2 %.3g), vs each alone relative L2 %.3g, top-1 %.3f\n",
              dtype, hip ? "HiP" : "dense", static_cast<long long>(one.fewest_one_call_layers),
              static_cast<long long>(layers), one_vs_each.max_abs_diff(), one_vs_each.relative_l2(), one.relative_l2(),
              one.top1_agreement());
  EXPECT_EQ(each.fewest_one_call_layers, 0);
  if (f32) {
    // HiP's sparse layers in one launch, its dense layers and the dense side per sequence.
    EXPECT_EQ(one.fewest_one_call_layers, hip ? layers - first_hip_layer(model->config, params.dense_layers) : 0);
    for (size_t i = 0; i < prompts.size(); ++i)
      for (int64_t s = 0; s < kSteps; ++s)
        EXPECT_TRUE(one.together[i][static_cast<size_t>(s)].equal(each.together[i][static_cast<size_t>(s)]))
            << (hip ? "HiP" : "dense") << " sequence " << i << " step " << s;
    EXPECT_LE(one.max_abs_diff(), 1e-3);
  } else {
    EXPECT_EQ(one.fewest_one_call_layers, layers) << (hip ? "HiP" : "dense") << ": a layer attended per sequence";
    EXPECT_LT(one_vs_each.relative_l2(), 2e-2) << (hip ? "HiP" : "dense");
    EXPECT_LT(one.relative_l2(), 2e-2) << (hip ? "HiP" : "dense");
    EXPECT_GE(one.top1_agreement(), 0.9) << (hip ? "HiP" : "dense");
  }
}

TEST(BatchedDecodeCuda, DenseOneCallMatchesPerSequenceAndAlone) {
  if (!cuda_available())
    GTEST_SKIP() << "no CUDA: this LibTorch has no CUDA support or no GPU is visible; run the gpu-labelled tests on "
                    "a GPU machine (README: GPU build)";
  for (const char* dtype : {"f32", "bf16"}) expect_one_call_matches(dtype, /*hip=*/false);
}

TEST(BatchedDecodeCuda, HipOneCallMatchesPerSequenceAndAlone) {
  REQUIRE_CUDA_KERNELS();
  for (const char* dtype : {"f32", "bf16"}) expect_one_call_matches(dtype, /*hip=*/true);
}

TEST(BatchedDecodeCuda, LayerTimerLeavesTheLogitsUnchanged) {
  REQUIRE_CUDA_KERNELS();
  auto model = load_model(resolve_model_source(""), parse_run_device("cuda", "bf16"));
  const HipModelParams params = testing::small_hip_params();
  testing::expect_timer_leaves_logits_unchanged(model, kSteps, [] { return std::make_unique<DenseAttention>(); });
  testing::expect_timer_leaves_logits_unchanged(model, kSteps, [&]() -> std::unique_ptr<AttentionBackend> {
    return std::make_unique<HipAttention>(params, model->config.n_layers);
  });
  std::printf("[gpu] stories15M bf16 batched decode with the layer timer: logits identical, dense and HiP\n");
}

}  // namespace
}  // namespace hipstudio
