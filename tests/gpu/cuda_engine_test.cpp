// stories15M on CUDA against the CPU (label: gpu). Skips with a message where no GPU exists.
#include <cstdio>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/model_source.h"
#include "engine/model/generation.h"
#include "engine/model/hip_attention.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "tests/engine/hip_test_setup.h"

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

// Greedy decode steps after a prefill, with the step's row-wise work replayed from CUDA graphs or
// launched eagerly: per-step logits [steps, vocab] and whether every step took the asked path;
// `attention_graphed` counts the steps whose attention ran inside the graphs.
at::Tensor decode_logits(std::shared_ptr<const Model> model, AttentionBackend& attention, bool graphs, int steps,
                         int* attention_graphed = nullptr) {
  const auto ids = model->tokenizer->encode(kText, true);
  const int64_t capacity = static_cast<int64_t>(ids.size()) + steps;
  Transformer transformer(model, capacity);
  transformer.set_decode_graphs(graphs);
  KVCache cache(model->config, model->run, capacity);
  at::Tensor logits = transformer.forward(ids, cache, attention);
  std::vector<at::Tensor> rows;
  for (int s = 0; s < steps; ++s) {
    const int32_t next = static_cast<int32_t>(logits[0].argmax().item<int64_t>());
    logits = transformer.forward({next}, cache, attention, LogitsFor::LastToken, Phase::Decode);
    EXPECT_EQ(transformer.last_step_graphed(), graphs) << "step " << s;
    if (attention_graphed) *attention_graphed += transformer.last_step_attention_graphed() ? 1 : 0;
    rows.push_back(logits);
  }
  return at::cat(rows, 0);
}

// A graph-replayed decode step computes what the eager one does, dense and HiP (cached masks and
// refreshes), in fp32 and bf16. HiP's cached steps run their sparse layers' attention inside the
// graphs (from l_d on; l_d 0 puts every layer there), its refresh steps eagerly.
TEST(CudaEngine, GraphDecodeStepsMatchEagerSteps) {
  REQUIRE_CUDA();
  ASSERT_TRUE(DecodeGraph::supported()) << "this CUDA build cannot capture CUDA graphs (engine without HIPSTUDIO_TORCH_CUDA)";
  const int steps = 12;
  for (const char* dtype : {"f32", "bf16"}) {
    auto model = load("cuda", dtype);
    for (const int variant : {0, 1, 2}) {  // dense; HiP l_d 1, r_m 4; HiP l_d 0, r_m 3
      const bool hip = variant > 0;
      DenseAttention dense;
      HipModelParams params = testing::small_hip_params();
      if (variant == 2) {
        params.dense_layers = 0;
        params.refresh_every = 3;
      }
      HipAttention hip_eager(params, model->config.n_layers), hip_graph(params, model->config.n_layers);
      int graphed = 0;
      const at::Tensor eager = decode_logits(model, hip ? static_cast<AttentionBackend&>(hip_eager) : dense, false, steps);
      const at::Tensor graph =
          decode_logits(model, hip ? static_cast<AttentionBackend&>(hip_graph) : dense, true, steps, &graphed);
      const double diff = (eager - graph).abs().max().item<double>();
      // Refreshes at steps 0, r_m, 2 r_m, ...: every other step is a cached one.
      const int cached = hip ? steps - (steps + static_cast<int>(params.refresh_every) - 1) / static_cast<int>(params.refresh_every) : 0;
      std::printf("[gpu] stories15M %s %s decode, CUDA graphs vs eager: max abs logit diff %.3g over %d steps, "
                  "greedy tokens %s, attention inside the graphs on %d steps\n",
                  dtype, hip ? (variant == 1 ? "HiP l_d 1" : "HiP l_d 0") : "dense", diff, steps,
                  eager.argmax(-1).equal(graph.argmax(-1)) ? "identical" : "DIFFERENT", graphed);
      EXPECT_LE(diff, std::string(dtype) == "f32" ? 1e-4 : 2e-2) << dtype << " variant " << variant;
      EXPECT_TRUE(eager.argmax(-1).equal(graph.argmax(-1))) << dtype << " variant " << variant;
      EXPECT_EQ(graphed, cached) << dtype << " variant " << variant;
    }
  }
}

}  // namespace
}  // namespace hipstudio
