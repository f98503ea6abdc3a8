// stories15M on CUDA against the CPU (label: gpu). Skips with a message where no GPU exists.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include "engine/formats/model_source.h"
#include "engine/generation/generation.h"
#include "engine/backends/hip_attention.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "tests/engine/hip_test_setup.h"
#include "tests/gpu/random_bf16_model.h"
#include "tests/gpu/require_cuda_kernels.h"

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

// Greedy decode steps after a prefill of `ids` (default: kText), with the step's row-wise work
// replayed from CUDA graphs or launched eagerly: per-step logits [steps, vocab] and whether every
// step took the asked path; `graphed` tallies the steps whose attention ran inside the graphs.
at::Tensor decode_logits(std::shared_ptr<const Model> model, AttentionBackend& attention, bool graphs, int steps,
                         GraphedAttentionSteps* graphed = nullptr, std::vector<int32_t> ids = {}) {
  if (ids.empty()) ids = model->tokenizer->encode(kText, true);
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
    if (graphed) graphed->add(transformer.last_step_attention_graphed_from());
    rows.push_back(logits);
  }
  return at::cat(rows, 0);
}

// A graph-replayed decode step computes what the eager one does, dense and HiP (cached masks and
// refreshes), in fp32 and bf16. HiP's cached steps run their layers' attention inside the graphs
// (bf16: every layer, its dense ones through flash as the dense side's; fp32: from l_d on; l_d 0
// puts every layer there), its refresh steps eagerly (stories15M's head_dim 48 is not the
// few-search mask kernel's: GraphRefreshStepsMatchEagerSteps covers those). Dense decode steps run
// their attention inside the graphs in bf16 (flash with the key count on the device), not in fp32
// (flash has no fp32).
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
      GraphedAttentionSteps graphed;
      const at::Tensor eager = decode_logits(model, hip ? static_cast<AttentionBackend&>(hip_eager) : dense, false, steps);
      const at::Tensor graph =
          decode_logits(model, hip ? static_cast<AttentionBackend&>(hip_graph) : dense, true, steps, &graphed);
      const double diff = (eager - graph).abs().max().item<double>();
      // Refreshes at steps 0, r_m, 2 r_m, ...: every other step is a cached one.
      const bool dense_in_graph = DenseAttention::decodes_in_graph(
          at::zeros({model->config.n_heads, 1, model->config.head_dim}, at::TensorOptions().device(model->run.device).dtype(model->run.dtype)),
          at::zeros({model->config.n_kv_heads, 8, model->config.head_dim}, at::TensorOptions().device(model->run.device).dtype(model->run.dtype)));
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
      EXPECT_EQ(dense_in_graph, std::string(dtype) == "bf16") << "flash with seqused_k: bf16/f16 on sm_80 and newer";
#endif
      const int cached = hip ? steps - (steps + static_cast<int>(params.refresh_every) - 1) / static_cast<int>(params.refresh_every)
                             : (dense_in_graph ? steps : 0);
      // Where the dense attention is captured, every layer attends inside the tail (HiP's l_d dense
      // layers too); elsewhere HiP's tail starts at l_d and dense has none.
      const int64_t from = dense_in_graph ? 0 : (hip ? params.dense_layers : -1);
      std::printf("[gpu] stories15M %s %s decode, CUDA graphs vs eager: max abs logit diff %.3g over %d steps, "
                  "greedy tokens %s, attention inside the graphs on %d steps\n",
                  dtype, hip ? (variant == 1 ? "HiP l_d 1" : "HiP l_d 0") : "dense", diff, steps,
                  eager.argmax(-1).equal(graph.argmax(-1)) ? "identical" : "DIFFERENT", static_cast<int>(graphed.steps));
      EXPECT_LE(diff, std::string(dtype) == "f32" ? 1e-4 : 2e-2) << dtype << " variant " << variant;
      EXPECT_TRUE(eager.argmax(-1).equal(graph.argmax(-1))) << dtype << " variant " << variant;
      EXPECT_EQ(graphed.steps, cached) << dtype << " variant " << variant;
      EXPECT_EQ(graphed.from, cached > 0 ? from : -1) << dtype << " variant " << variant;
    }
  }
}


// HiP's refresh steps inside the decode graphs (each sparse layer's mask search reading the
// position on the device and writing its rows itself) compute what the eager steps do (the search
// and the rows' layout launched apart, the position from the host): on a model whose refreshes the
// few-search kernel serves, every step of a decode with refreshes at steps 0, 3, 6 and 9 replays
// HiP's attention inside the graphs. With every layer sparse (l_d 0) the logits equal the eager
// run's bit for bit (the same kernels on the same inputs: one block of one head's mask taken
// wrongly, or a search reading the graph's stale query before the RoPE kernel ends (layers 2-3
// start as its dependents; layer 1 begins a graph of the tail's, decode_tail_chunks), would show). With a dense layer 0 (l_d 1) that layer runs flash over
// the whole cache with the key count on the device inside the graph, SDPA over the keys so far
// eagerly: the same kernels split the keys at other places, so the logits agree to bf16 rounding.
TEST(CudaEngine, GraphRefreshStepsMatchEagerSteps) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(DecodeGraph::supported()) << "this CUDA build cannot capture CUDA graphs (engine without HIPSTUDIO_TORCH_CUDA)";
  const auto model = random_bf16_model();
  for (const int64_t dense_layers : {0, 1}) {
    HipModelParams params;
    params.hip.k = 64, params.hip.b_q = 16, params.hip.b_k = 2, params.hip.sink = 2, params.hip.window = 4;
    params.dense_layers = dense_layers, params.refresh_every = 3;
    const int steps = 12;
    std::vector<int32_t> prompt(1000);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37 + 11) % 512);
    HipAttention hip_eager(params, model->config.n_layers), hip_graph(params, model->config.n_layers);
    GraphedAttentionSteps graphed_eager, graphed;
    const at::Tensor eager = decode_logits(model, hip_eager, false, steps, &graphed_eager, prompt);
    const at::Tensor graph = decode_logits(model, hip_graph, true, steps, &graphed, prompt);
    const double diff = (eager - graph).abs().max().item<double>();
    std::printf("[gpu] random bf16 model (head_dim 64), HiP l_d %lld r_m 3 decode, CUDA graphs vs eager: max abs logit "
                "diff %.3g over %d steps, greedy tokens %s, attention inside the graphs on %d steps (refreshes included)\n",
                static_cast<long long>(dense_layers), diff, steps,
                eager.argmax(-1).equal(graph.argmax(-1)) ? "identical" : "DIFFERENT", static_cast<int>(graphed.steps));
    if (dense_layers == 0) EXPECT_EQ(diff, 0.0);
    else EXPECT_LE(diff, 2e-2);
    EXPECT_TRUE(eager.argmax(-1).equal(graph.argmax(-1))) << "l_d " << dense_layers;
    EXPECT_EQ(graphed_eager.steps, 0);
    EXPECT_EQ(graphed.steps, steps) << "l_d " << dense_layers;
    EXPECT_EQ(graphed.from, 0) << "l_d " << dense_layers << ": the dense layer attends inside the graph too";
  }
}

// The dense decode attention a graph captures (DenseAttention::attend_in_graph: flash over the
// whole cache, the key count read on the device) equals attend()'s eager SDPA over the keys so far,
// for a GQA layer of Llama-3.1-8B's shape (32 query heads, 8 KV heads, head_dim 128) in bf16, at
// several key counts; the cache's slots past the count hold keys of 50 and values of 50, which a
// call reading past it would let dominate (differences of ~50, not of bf16 rounding). Called here
// outside a capture; GraphDecodeStepsMatchEagerSteps replays the captured call at a new key count
// each step (dense bf16: the same logits as eager steps).
TEST(CudaEngine, DenseGraphedDecodeAttentionMatchesEager) {
  REQUIRE_CUDA();
  const auto options = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const int64_t heads = 32, kv_heads = 8, d = 128, capacity = 3000;
  at::manual_seed(11);
  const at::Tensor q = at::randn({heads, 1, d}, options);
  if (!DenseAttention::decodes_in_graph(q, at::zeros({kv_heads, capacity, d}, options)))
    GTEST_SKIP() << "this LibTorch's flash attention has no device-side key count (LibTorch 2.5 or later needed)";
  for (const int64_t keys : {int64_t{1}, int64_t{700}, int64_t{2999}}) {
    at::Tensor k = at::full({kv_heads, capacity, d}, 50.0, options), v = at::full({kv_heads, capacity, d}, 50.0, options);
    k.narrow(1, 0, keys).copy_(at::randn({kv_heads, keys, d}, options));
    v.narrow(1, 0, keys).copy_(at::randn({kv_heads, keys, d}, options));
    DenseAttention dense;
    AttentionCall eager_call;
    eager_call.q = q, eager_call.k = k.narrow(1, 0, keys), eager_call.v = v.narrow(1, 0, keys);
    eager_call.first_position = keys - 1, eager_call.decoding = true;
    const at::Tensor expected = dense.attend(eager_call).to(at::kFloat);
    ASSERT_EQ(dense.prepare_graphed_decode(q, k).from_layer, 0);
    AttentionCall graph_call = eager_call;
    graph_call.k = k, graph_call.v = v;
    graph_call.key_count = at::full({1}, keys, at::TensorOptions().device(at::kCUDA).dtype(at::kInt));
    const at::Tensor out =
        dense.attend_in_graph(graph_call, at::full({1}, keys - 1, at::TensorOptions().device(at::kCUDA).dtype(at::kLong)), nullptr);
    ASSERT_EQ(out.sizes(), q.sizes());
    const double diff = (out.to(at::kFloat) - expected).abs().max().item<double>();
    std::printf("[gpu] dense decode attention, %lld keys of a %lld-slot cache, graph form (flash, device key count) vs "
                "eager SDPA: max abs diff %.3g\n",
                static_cast<long long>(keys), static_cast<long long>(capacity), diff);
    EXPECT_LE(diff, 2e-2) << keys << " keys";
  }
}

// The decode graphs are captured again when what they baked in changes: a new r_m whose cached masks
// need another tail room (new HiP buffers), then another HiP backend (another l_d) on the same
// transformer and cache. Every step's logits equal an eager run's that makes the same changes at the
// same steps, and the steps after each change replay HiP's attention inside the graphs again.
TEST(CudaEngine, GraphDecodeStepsFollowANewRmAndANewBackend) {
  REQUIRE_CUDA();
  ASSERT_TRUE(DecodeGraph::supported()) << "this CUDA build cannot capture CUDA graphs (engine without HIPSTUDIO_TORCH_CUDA)";
  auto model = load("cuda", "bf16");
  const auto ids = model->tokenizer->encode(kText, true);
  const int steps = 18;
  HipModelParams first = testing::small_hip_params();  // l_d 1, r_m 4, b_k 2: tail room 4
  HipModelParams other = first;
  other.dense_layers = 2;
  // Steps 0-5 with `first`, 6-11 with r_m 8 (tail room 6), 12-17 with a second backend at l_d 2.
  auto run = [&](bool graphs, std::vector<int>* graphed_by_phase) {
    const int64_t capacity = static_cast<int64_t>(ids.size()) + steps;
    Transformer transformer(model, capacity);
    transformer.set_decode_graphs(graphs);
    KVCache cache(model->config, model->run, capacity);
    HipAttention a(first, model->config.n_layers), b(other, model->config.n_layers);
    at::Tensor logits = transformer.forward(ids, cache, a);
    std::vector<at::Tensor> rows;
    for (int s = 0; s < steps; ++s) {
      if (s == 6) a.set_refresh_every(8);
      AttentionBackend& backend = s < 12 ? static_cast<AttentionBackend&>(a) : b;
      const int32_t next = static_cast<int32_t>(logits[0].argmax().item<int64_t>());
      logits = transformer.forward({next}, cache, backend, LogitsFor::LastToken, Phase::Decode);
      if (graphed_by_phase) (*graphed_by_phase)[static_cast<size_t>(s / 6)] += transformer.last_step_attention_graphed_from() >= 0 ? 1 : 0;
      rows.push_back(logits);
    }
    return at::cat(rows, 0);
  };
  std::vector<int> graphed(3, 0);
  const at::Tensor eager = run(false, nullptr), graph = run(true, &graphed);
  const double diff = (eager - graph).abs().max().item<double>();
  std::printf("[gpu] stories15M bf16 HiP decode through a new r_m and a new backend, CUDA graphs vs eager: max abs logit "
              "diff %.3g over %d steps, attention inside the graphs on %d / %d / %d steps of each phase\n",
              diff, steps, graphed[0], graphed[1], graphed[2]);
  EXPECT_LE(diff, 2e-2);
  EXPECT_TRUE(eager.argmax(-1).equal(graph.argmax(-1)));
  // Phase 1: refreshes at steps 0 and 4. Phase 2 (r_m 8 from step 6, masks forgotten): a refresh at
  // step 6. Phase 3: the new backend refreshes at steps 12 (it has no masks yet) and 16.
  EXPECT_EQ(graphed[0], 4);
  EXPECT_EQ(graphed[1], 5);
  EXPECT_EQ(graphed[2], 4);
}

}  // namespace
}  // namespace hipstudio
