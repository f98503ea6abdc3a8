// stories15M on CUDA against the CPU (label: gpu). Skips with a message where no GPU exists.
#include <cstdio>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/model_source.h"
#include "engine/model/generation.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"

namespace hipstudio {
namespace {

#define REQUIRE_CUDA()                                                                                  \
  if (!cuda_available())                                                                                \
  GTEST_SKIP() << "no CUDA: this LibTorch has no CUDA support or no GPU is visible; "                   \
                  "run the gpu-labelled tests on a GPU machine (README: GPU build)"

std::shared_ptr<const Model> load(const char* device, const char* dtype) {
  return load_model(resolve_model_source(""), parse_run_device(device, dtype));
}

const char* kText = "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.";

TEST(CudaEngine, Fp32LogitsMatchCpu) {
  REQUIRE_CUDA();
  auto cpu = load("cpu", "f32");
  auto gpu = load("cuda", "f32");
  DenseAttention dense;
  const auto ids = cpu->tokenizer->encode(kText, true);
  const at::Tensor a = all_logits(cpu, ids, dense);
  const at::Tensor b = all_logits(gpu, ids, dense);
  const double diff = (a - b).abs().max().item<double>();
  std::printf("[gpu] stories15M fp32 logits, CUDA vs CPU: max abs diff %.3g over %lld x %lld\n", diff,
              static_cast<long long>(a.size(0)), static_cast<long long>(a.size(1)));
  EXPECT_LE(diff, 1e-3);
}

void expect_half_precision_close(const char* dtype) {
  auto cpu = load("cpu", "f32");
  auto gpu = load("cuda", dtype);
  DenseAttention dense;
  const auto ids = cpu->tokenizer->encode(kText, true);
  const at::Tensor a = all_logits(cpu, ids, dense);
  const at::Tensor b = all_logits(gpu, ids, dense);
  const double diff = (a - b).abs().max().item<double>();
  const double rel = ((a - b).norm() / a.norm()).item<double>();
  const double agree = a.argmax(-1).eq(b.argmax(-1)).to(at::kDouble).mean().item<double>();
  std::printf("[gpu] stories15M %s logits, CUDA vs CPU fp32: max abs diff %.3g, relative L2 %.3g, top-1 agreement %.3f\n",
              dtype, diff, rel, agree);
  EXPECT_LT(rel, 0.05);
  EXPECT_GE(agree, 0.9);
}

TEST(CudaEngine, Bf16LogitsStayCloseToCpuFp32) {
  REQUIRE_CUDA();
  expect_half_precision_close("bf16");
}

TEST(CudaEngine, F16LogitsStayCloseToCpuFp32) {
  REQUIRE_CUDA();
  expect_half_precision_close("f16");
}

TEST(CudaEngine, ChunkedPrefillThroughFusedAttentionMatchesCpu) {
  REQUIRE_CUDA();
  // Three chunks: the first runs fused causal attention, the later ones pass an explicit mask.
  auto cpu = load("cpu", "f32");
  auto gpu = load("cuda", "f32");
  DenseAttention dense;
  const auto ids = cpu->tokenizer->encode(kText, true);
  const at::Tensor reference = all_logits(cpu, ids, dense);
  Transformer transformer(gpu, static_cast<int64_t>(ids.size()));
  KVCache cache(gpu->config, gpu->run, static_cast<int64_t>(ids.size()));
  const size_t a = ids.size() / 3, b = 2 * ids.size() / 3;
  std::vector<at::Tensor> parts{transformer.forward({ids.begin(), ids.begin() + a}, cache, dense, LogitsFor::AllTokens),
                                transformer.forward({ids.begin() + a, ids.begin() + b}, cache, dense, LogitsFor::AllTokens),
                                transformer.forward({ids.begin() + b, ids.end()}, cache, dense, LogitsFor::AllTokens)};
  const double diff = (at::cat(parts, 0) - reference).abs().max().item<double>();
  std::printf("[gpu] stories15M fp32, 3-chunk prefill on CUDA vs CPU: max abs diff %.3g\n", diff);
  EXPECT_LE(diff, 1e-3);
}

TEST(CudaEngine, GreedyGenerationMatchesCpu) {
  REQUIRE_CUDA();
  DenseAttention dense;
  GenerationOptions options;
  options.max_new_tokens = 40;
  auto a = generate(load("cpu", "f32"), "Once upon a time", options, dense);
  auto b = generate(load("cuda", "f32"), "Once upon a time", options, dense);
  EXPECT_EQ(a.generated_ids, b.generated_ids);
}

}  // namespace
}  // namespace hipstudio
