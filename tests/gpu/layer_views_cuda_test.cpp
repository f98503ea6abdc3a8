// The views layer on CUDA (label: gpu) against the float64 CPU reference: the shared table of cases
// with HiP's mask taken from the CUDA kernels, as the forward pass hands it over; and the paired
// analysis on CUDA in fp32 against the same analysis on the CPU, layer by layer, for stories15M and a
// tiny random checkpoint with grouped-query attention.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/model_source.h"
#include "engine/runtime/device.h"
#include "engine/analysis/paired_analysis.h"
#include "kernels/torch/hip_torch.h"
#include "tests/engine/hip_test_setup.h"
#include "tests/gpu/require_cuda_kernels.h"
#include "tests/engine/layer_views_cases.h"
#include "tests/engine/arch_fixture_cases.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/tiny_hf_checkpoint.h"

namespace hipstudio {
namespace {

using testing::LayerViewsCase;

// The largest difference of two qualities' numbers; infinity where one is NaN and the other not (a
// windowed layer's are NaN on both sides).
double max_quality_diff(const LayerQuality& a, const LayerQuality& b, bool recall_only = false) {
  double worst = 0;
  if (a.heads.size() != b.heads.size()) return std::numeric_limits<double>::infinity();
  for (size_t h = 0; h < a.heads.size(); ++h)
    for (double d : {a.heads[h].recall - b.heads[h].recall, a.heads[h].mass - b.heads[h].mass})
      if (std::isnan(d) && !(std::isnan(a.heads[h].mass) && std::isnan(b.heads[h].mass))) return std::numeric_limits<double>::infinity();
  for (size_t h = 0; h < a.heads.size(); ++h) {
    const HeadQuality &x = a.heads[h], &y = b.heads[h];
    for (double d : {x.recall - y.recall, x.random_recall - y.random_recall})
      worst = std::max(worst, std::abs(d));
    if (recall_only) continue;
    for (double d : {x.mass - y.mass, x.random_mass - y.random_mass, x.out_rel_err - y.out_rel_err,
                     x.random_out_rel_err - y.random_out_rel_err})
      worst = std::max(worst, std::abs(d));
  }
  return worst;
}

// HiP's mask of a chunk as the CUDA forward pass computes it.
at::Tensor kernel_mask(const LayerViewsCase& c, const at::Tensor& q, const at::Tensor& k) {
  return hip_torch::estimate_masks(q, k, c.params).blocks;
}

// The table plus a Llama-shaped layer at 8k tokens (GQA 4:1, d 128, the paper's k 512, b_q 64,
// b_sq 2), fed in two prefill chunks.
std::vector<LayerViewsCase> cuda_cases() {
  std::vector<LayerViewsCase> cases = testing::layer_views_cases();
  cases.push_back(testing::llama_shaped_layer_views_case());
  return cases;
}

TEST(LayerViewsCuda, Fp32MasksAndOracleIdenticalMetricsWithin1e6) {
  REQUIRE_CUDA_KERNELS();
  for (const LayerViewsCase& c : cuda_cases()) {
    const auto in = testing::layer_views_inputs(c, 5);
    const LayerViewsResult ref = compute_layer_views(in.q, in.k, in.v, testing::layer_views_setup(c), /*use_reference=*/true);
    const at::Tensor q = in.q.cuda(), k = in.k.cuda(), v = in.v.cuda();
    const LayerViewsResult got = testing::tensor_views_in_chunks(
        c, q, k, v, [&](const at::Tensor& qc, const at::Tensor& kc) { return kernel_mask(c, qc, kc); });
    EXPECT_EQ(got.masks.hip.blocks, ref.masks.hip.blocks) << c.name;
    EXPECT_EQ(got.masks.oracle.blocks, ref.masks.oracle.blocks) << c.name;
    EXPECT_EQ(got.masks.oracle.counts, ref.masks.oracle.counts) << c.name;
    EXPECT_EQ(got.masks.random.blocks, ref.masks.random.blocks) << c.name;
    const double diff = max_quality_diff(got.quality, ref.quality);
    std::printf("[gpu] layer views %s fp32, CUDA vs float64 reference: masks %s, max metric diff %.3g\n", c.name.c_str(),
                got.masks.oracle.blocks == ref.masks.oracle.blocks ? "identical" : "DIFFERENT", diff);
    EXPECT_LE(diff, 1e-6) << c.name;
  }
}

TEST(LayerViewsCuda, Bf16WithinBf16Tolerance) {
  REQUIRE_CUDA_KERNELS();
  for (const LayerViewsCase& c : cuda_cases()) {
    const auto in = testing::layer_views_inputs(c, 7);
    const at::Tensor q = in.q.to(at::kBFloat16), k = in.k.to(at::kBFloat16), v = in.v.to(at::kBFloat16);
    const LayerViewsResult ref = compute_layer_views(q, k, v, testing::layer_views_setup(c), true);
    const LayerViewsResult got = testing::tensor_views_in_chunks(
        c, q.cuda(), k.cuda(), v.cuda(), [&](const at::Tensor& qc, const at::Tensor& kc) { return kernel_mask(c, qc, kc); });
    const double recall = max_quality_diff(got.quality, ref.quality, true), all = max_quality_diff(got.quality, ref.quality);
    std::printf("[gpu] layer views %s bf16, CUDA vs float64 reference: max recall diff %.3g, max metric diff %.3g\n",
                c.name.c_str(), recall, all);
    EXPECT_LE(recall, 0.05) << c.name;  // the kernels' bf16 tensor-core scores may flip near-ties
    EXPECT_LE(all, 0.05) << c.name;
  }
}

// The fused route (a whole-prompt bf16 chunk: dense rows and log-sum-exp from the flash kernel, the
// oracle's sampled rows only, the attended keys' scores gathered) against the unfused route on the same
// inputs and mask, and against the float64 reference. A wrong log-sum-exp or causal rule would show in
// the mass at once; the output error may differ by the flash output's bf16 rounding.
TEST(LayerViewsCuda, Bf16FusedRouteEqualsTheUnfusedRoute) {
  REQUIRE_CUDA_KERNELS();
  for (LayerViewsCase c : cuda_cases()) {
    c.chunk = 0;  // the fused route takes whole prompts
    const auto in = testing::layer_views_inputs(c, 13);
    const at::Tensor q = in.q.to(at::kBFloat16), k = in.k.to(at::kBFloat16), v = in.v.to(at::kBFloat16);
    const LayerViewsResult ref = compute_layer_views(q, k, v, testing::layer_views_setup(c), true);
    auto run = [&](bool fused) {
      LayerViewsSetup setup = testing::layer_views_setup(c);
      setup.fused_dense = fused;
      auto views = make_tensor_layer_views(setup);
      LayerViewsChunk chunk;
      chunk.q = q.cuda();
      chunk.k = k.cuda();
      chunk.v = v.cuda();
      chunk.hip_blocks = kernel_mask(c, chunk.q, chunk.k);
      views->add_chunk(chunk);
      return views->finish();
    };
    const LayerViewsResult fused = run(true), plain = run(false);
    EXPECT_EQ(fused.fused_dense, c.math.score.softcap == 0.0) << c.name << ": the flash kernel has no soft-cap";
    EXPECT_FALSE(plain.fused_dense) << c.name;
    EXPECT_EQ(fused.masks.hip.blocks, plain.masks.hip.blocks) << c.name;
    size_t oracle_diff = 0;
    for (size_t i = 0; i < fused.masks.oracle.blocks.size(); ++i)
      oracle_diff += fused.masks.oracle.blocks[i] != plain.masks.oracle.blocks[i] ? 1 : 0;
    double recall = 0, mass = 0, error = 0;
    for (size_t h = 0; h < fused.quality.heads.size(); ++h) {
      const HeadQuality &a = fused.quality.heads[h], &b = plain.quality.heads[h];
      recall = std::max({recall, std::abs(a.recall - b.recall), std::abs(a.random_recall - b.random_recall)});
      mass = std::max({mass, std::abs(a.mass - b.mass), std::abs(a.random_mass - b.random_mass)});
      error = std::max({error, std::abs(a.out_rel_err - b.out_rel_err), std::abs(a.random_out_rel_err - b.random_out_rel_err)});
    }
    const double vs_reference = max_quality_diff(fused.quality, ref.quality);
    std::printf("[gpu] layer views %s bf16, fused vs unfused route: %zu of %zu oracle entries differ, max recall diff %.3g, "
                "mass diff %.3g, error diff %.3g; fused vs float64 reference %.3g\n",
                c.name.c_str(), oracle_diff, fused.masks.oracle.blocks.size(), recall, mass, error, vs_reference);
    EXPECT_LE(static_cast<double>(oracle_diff), 1e-3 * static_cast<double>(fused.masks.oracle.blocks.size()) + 2) << c.name;
    EXPECT_LE(recall, 0.01) << c.name;
    EXPECT_LE(mass, 1e-4) << c.name;
    EXPECT_LE(error, 1e-2) << c.name;
    EXPECT_LE(vs_reference, 0.05) << c.name;
  }
}

// The block-max kernel's oracle scores against the tensor ops' (the same products, exact in float32,
// summed in another order): the oracle's blocks and every metric as the tensor ops give them.
TEST(LayerViewsCuda, Bf16BlockMaxKernelGivesTheTensorOpsOracle) {
  REQUIRE_CUDA_KERNELS();
  for (LayerViewsCase c : cuda_cases()) {
    c.chunk = 0;
    if (c.math.score.softcap != 0.0) continue;  // no fused route: the kernel does not run
    const auto in = testing::layer_views_inputs(c, 17);
    const at::Tensor q = in.q.to(at::kBFloat16).cuda(), k = in.k.to(at::kBFloat16).cuda(), v = in.v.to(at::kBFloat16).cuda();
    auto run = [&](bool kernel) {
      LayerViewsSetup setup = testing::layer_views_setup(c);
      setup.block_max_kernel = kernel;
      auto views = make_tensor_layer_views(setup);
      LayerViewsChunk chunk;
      chunk.q = q, chunk.k = k, chunk.v = v;
      chunk.hip_blocks = kernel_mask(c, q, k);
      views->add_chunk(chunk);
      return views->finish();
    };
    const LayerViewsResult by_kernel = run(true), by_ops = run(false);
    EXPECT_TRUE(by_kernel.block_max_kernel) << c.name;
    EXPECT_FALSE(by_ops.block_max_kernel) << c.name;
    size_t oracle_diff = 0;
    for (size_t i = 0; i < by_kernel.masks.oracle.blocks.size(); ++i)
      oracle_diff += by_kernel.masks.oracle.blocks[i] != by_ops.masks.oracle.blocks[i] ? 1 : 0;
    const double diff = max_quality_diff(by_kernel.quality, by_ops.quality);
    std::printf("[gpu] layer views %s bf16, block-max kernel vs tensor ops: %zu of %zu oracle entries differ, max metric diff %.3g\n",
                c.name.c_str(), oracle_diff, by_kernel.masks.oracle.blocks.size(), diff);
    EXPECT_LE(static_cast<double>(oracle_diff), 1e-3 * static_cast<double>(by_kernel.masks.oracle.blocks.size()) + 2) << c.name;
    EXPECT_LE(diff, 0.01) << c.name;
  }
}

TEST(LayerViewsCuda, Stories15MAnalysisOnCudaMatchesTheCpuLayerByLayer) {
  REQUIRE_CUDA_KERNELS();
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.decode_steps = 4;
  auto load = [](const char* device) { return load_model(resolve_model_source(""), parse_run_device(device, "f32")); };
  const PairedAnalysis cpu = run_paired_analysis(load("cpu"), testing::kStory, o);
  const PairedAnalysis gpu = run_paired_analysis(load("cuda"), testing::kStory, o);
  ASSERT_EQ(cpu.layers.size(), gpu.layers.size());
  ASSERT_EQ(cpu.masks.size(), gpu.masks.size());
  double worst = 0;
  for (size_t l = 0; l < cpu.layers.size(); ++l) {
    worst = std::max(worst, max_quality_diff(cpu.layers[l], gpu.layers[l]));
    EXPECT_EQ(cpu.masks[l].hip.blocks, gpu.masks[l].hip.blocks) << "layer " << l;
    EXPECT_EQ(cpu.masks[l].oracle.blocks, gpu.masks[l].oracle.blocks) << "layer " << l;
    EXPECT_EQ(cpu.masks[l].random.blocks, gpu.masks[l].random.blocks) << "layer " << l;
  }
  std::printf("[gpu] stories15M analysis fp32, CUDA views vs CPU reference: max per-head metric diff %.3g over %zu layers; "
              "KL %.6g / %.6g, HiP ppl %.6f / %.6f\n", worst, cpu.layers.size(), cpu.kl, gpu.kl, cpu.hip.ppl, gpu.hip.ppl);
  EXPECT_LE(worst, 1e-6);
  EXPECT_NEAR(gpu.hip.ppl, cpu.hip.ppl, 1e-3 * cpu.hip.ppl);
  EXPECT_EQ(gpu.dense.generated, cpu.dense.generated);
}

// A tiny random Qwen2-style checkpoint with grouped-query attention (4 query heads over 2 KV heads):
// the CUDA views read K/V through the GQA head mapping, which stories15M (MHA) never exercises.
TEST(LayerViewsCuda, TinyGqaCheckpointAnalysisOnCudaMatchesTheCpuLayerByLayer) {
  REQUIRE_CUDA_KERNELS();
  testing::TempDir tmp;
  testing::tiny_hf::write_checkpoint(testing::tiny_hf::make_weights(), tmp.path().string(), /*max_positions=*/1024);
  auto load = [&](const char* device) {
    auto model = std::make_shared<Model>();
    model->run = parse_run_device(device, "f32");
    model->weights = load_hf_weights(tmp.path().string(), at::kFloat, &model->config, model->run.device);
    model->tokenizer = std::make_shared<testing::tiny_hf::ByteTokenizer>();
    return std::shared_ptr<const Model>(model);
  };
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.decode_steps = 4;
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "A tiny model reads this line again, " + std::to_string(i) + ". ";
  const PairedAnalysis cpu = run_paired_analysis(load("cpu"), prompt, o);
  const PairedAnalysis gpu = run_paired_analysis(load("cuda"), prompt, o);
  ASSERT_EQ(gpu.layers.size(), static_cast<size_t>(testing::tiny_hf::kLayers));
  ASSERT_EQ(cpu.masks.size(), gpu.masks.size());
  double worst = 0;
  for (size_t l = 0; l < cpu.layers.size(); ++l) {
    ASSERT_EQ(gpu.layers[l].heads.size(), static_cast<size_t>(testing::tiny_hf::kHeads));
    worst = std::max(worst, max_quality_diff(cpu.layers[l], gpu.layers[l]));
    EXPECT_EQ(cpu.masks[l].hip.blocks, gpu.masks[l].hip.blocks) << "layer " << l;
    EXPECT_EQ(cpu.masks[l].oracle.blocks, gpu.masks[l].oracle.blocks) << "layer " << l;
    EXPECT_EQ(cpu.masks[l].random.blocks, gpu.masks[l].random.blocks) << "layer " << l;
  }
  std::printf("[gpu] tiny GQA checkpoint analysis fp32 (%zu tokens), CUDA views vs CPU reference: max per-head metric "
              "diff %.3g over %zu layers\n", cpu.prompt_ids.size(), worst, cpu.layers.size());
  EXPECT_GT(cpu.prompt_ids.size(), 400u);
  EXPECT_LE(worst, 1e-6);
  EXPECT_EQ(gpu.dense.generated, cpu.dense.generated);
}

// The Gemma 2 fixture (sliding layers 0 and 2, full layers 1 and 3, its own scale and an attention
// soft-cap): the CUDA views score each layer with its maths as the CPU reference does, and both say
// the windowed layers are windowed (NaN numbers) rather than show HiP's.
TEST(LayerViewsCuda, WindowedAndCappedFixtureAnalysisOnCudaMatchesTheCpuLayerByLayer) {
  REQUIRE_CUDA_KERNELS();
  const testing::ArchFixture f = testing::read_arch_fixture("gemma2");
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.hip.dense_layers = 0;
  o.decode_steps = 4;
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  const PairedAnalysis cpu = run_paired_analysis(testing::load_arch_fixture_model(f, "cpu", "f32"), prompt, o);
  const PairedAnalysis gpu = run_paired_analysis(testing::load_arch_fixture_model(f, "cuda", "f32"), prompt, o);
  ASSERT_EQ(cpu.layers.size(), gpu.layers.size());
  double worst = 0;
  int64_t windowed = 0, capped = 0;
  for (size_t l = 0; l < cpu.layers.size(); ++l) {
    EXPECT_TRUE(cpu.layers[l].math == gpu.layers[l].math) << "layer " << l;
    windowed += cpu.layers[l].math.windowed() ? 1 : 0;
    capped += cpu.layers[l].math.score.softcap > 0.0 ? 1 : 0;
    for (const PairedAnalysis* a : {&cpu, &gpu})
      for (const HeadQuality& h : a->layers[l].heads) EXPECT_EQ(std::isnan(h.mass), cpu.layers[l].math.windowed()) << "layer " << l;
    worst = std::max(worst, max_quality_diff(cpu.layers[l], gpu.layers[l]));
  }
  EXPECT_EQ(gpu.access.hip_layers, cpu.access.hip_layers);
  std::printf("[gpu] gemma2 fixture analysis fp32 (%lld windowed, %lld capped layers), CUDA views vs CPU reference: max "
              "per-head metric diff %.3g\n", static_cast<long long>(windowed), static_cast<long long>(capped), worst);
  EXPECT_GT(windowed, 0);
  EXPECT_GT(capped, 0);
  EXPECT_LE(worst, 1e-6);
}

}  // namespace
}  // namespace hipstudio
