// Batched decode steps replayed from CUDA graphs (engine/generation/batch_decode_graph.h, through
// BatchDecoder as generate --batch and bench model --batch run them; label: gpu) against the eager
// batched step (decode_batch, the reference) and against each sequence decoded alone, for sequences
// of different lengths in one batch, dense and HiP, HiP's refresh steps included. Skips with a
// message where no GPU exists.
//
// Against the eager batched step: bit for bit. The graphs run the same kernels on the same inputs
// (flash's variable-length call with the same offsets and key counts; HiP's batched sparse launch
// over the same rows and counts, its key splits chosen by the launch's shapes alone; HiP's refresh
// inside the graph is the same search as the eager estimate_masks + decode_rows, which the batch-1
// graph tests compare bit for bit); only where they read their inputs differs (the staging).
// Against each sequence alone: within float rounding, because the reduction order changes in two
// places: the matrix products over N rows instead of one (cuBLAS over the batch, the row kernels
// for one row), and each sequence's keys split by the batched launch's size (flash's split count
// and HiP's num_splits depend on the batch), so its softmax sums are added in another order.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/backends/hip_attention.h"
#include "engine/formats/model_source.h"
#include "engine/generation/batch_decoder.h"
#include "engine/generation/batch_generation.h"
#include "engine/generation/generation.h"
#include "tests/engine/batch_decode_check.h"
#include "tests/gpu/random_bf16_model.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

#define REQUIRE_BATCH_GRAPHS()                                                                                \
  if (!cuda_available())                                                                                      \
    GTEST_SKIP() << "no CUDA: this LibTorch has no CUDA support or no GPU is visible; run the gpu-labelled "  \
                    "tests on a GPU machine (README: GPU build)";                                             \
  ASSERT_TRUE(BatchDecodeGraph::supported()) << "this CUDA build cannot capture CUDA graphs (engine without HIPSTUDIO_TORCH_CUDA)"

// The batch decoded through BatchDecoder (graphs where the backends allow them), its caches slots of
// one storage of each prompt's capacity, fed the tokens the lone runs of `reference` fed (the
// prefill's greedy token, then each lone step's): logits (sequence, step) and the captures replayed.
struct GraphRun {
  std::vector<std::vector<at::Tensor>> logits;  // (sequence, step) float32 CPU [vocab]
  int64_t cached = 0, refreshed = 0;            // steps replayed from each capture
};
GraphRun decode_with_graphs(const std::shared_ptr<const Model>& model, const std::vector<std::vector<int32_t>>& prompts,
                            int64_t steps, const testing::MakeBackend& make, const testing::BatchComparison& reference) {
  size_t longest = 0;
  std::vector<int64_t> capacities;
  for (const auto& p : prompts) {
    longest = std::max(longest, p.size());
    capacities.push_back(static_cast<int64_t>(p.size()) + steps);
  }
  Transformer transformer(model, static_cast<int64_t>(longest) + steps);
  BatchKVStorage storage(model->config, model->run, capacities);
  std::vector<std::unique_ptr<AttentionBackend>> backends;
  std::vector<BatchSequence> batch;
  std::vector<int32_t> first;
  for (size_t i = 0; i < prompts.size(); ++i) {
    backends.push_back(make());
    KVCache& cache = storage.slot(static_cast<int64_t>(i));
    const at::Tensor logits = transformer.forward(prompts[i], cache, *backends.back());
    first.push_back(static_cast<int32_t>(logits[0].argmax().item<int64_t>()));
    batch.push_back({&cache, backends.back().get()});
  }
  BatchDecoder decoder(transformer, &storage);
  decoder.prepare(batch);
  GraphRun run;
  run.logits.resize(prompts.size());
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < prompts.size(); ++i)
      tokens.push_back(s == 0 ? first[i]
                              : static_cast<int32_t>(reference.alone[i][static_cast<size_t>(s - 1)].argmax().item<int64_t>()));
    const at::Tensor logits = decoder.step(tokens, batch);
    run.cached += decoder.last_step() == GraphedStep::kCached;
    run.refreshed += decoder.last_step() == GraphedStep::kRefresh;
    for (size_t i = 0; i < prompts.size(); ++i) run.logits[i].push_back(logits[static_cast<int64_t>(i)]);
  }
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(batch[i].cache->length(), static_cast<int64_t>(prompts[i].size()) + steps) << "sequence " << i;
  return run;
}

// The graph run against the eager batched run and the lone runs; `bits`: the eager batched
// comparison must be bit for bit (every step that replayed a graph; the others are eager steps).
struct Outcome {
  GraphRun graph;
  double vs_eager_max = 0, vs_alone_rel = 0, vs_alone_top1 = 0;
};
Outcome compare_graph_run(const std::shared_ptr<const Model>& model, const std::vector<std::vector<int32_t>>& prompts,
                          int64_t steps, const testing::MakeBackend& make, const char* what) {
  const testing::BatchComparison eager =
      testing::compare_batched_with_alone(model, prompts, steps, make, testing::BatchLayout::kSlotsOneCall);
  Outcome o;
  o.graph = decode_with_graphs(model, prompts, steps, make, eager);
  testing::BatchComparison vs_eager{eager.together, o.graph.logits, 0};
  testing::BatchComparison vs_alone{eager.alone, o.graph.logits, 0};
  o.vs_eager_max = vs_eager.max_abs_diff();
  o.vs_alone_rel = vs_alone.relative_l2();
  o.vs_alone_top1 = vs_alone.top1_agreement();
  for (size_t i = 0; i < prompts.size(); ++i)
    for (int64_t s = 0; s < steps; ++s)
      EXPECT_TRUE(o.graph.logits[i][static_cast<size_t>(s)].equal(eager.together[i][static_cast<size_t>(s)]))
          << what << ": sequence " << i << " step " << s << " differs from the eager batched step";
  std::printf("[gpu] %s, %zu sequences of %s tokens: %lld cached and %lld refresh steps of %lld from CUDA graphs; vs the "
              "eager batched step max abs logit diff %.3g; vs each sequence alone relative L2 %.3g, top-1 %.3f\n",
              what, prompts.size(),
              [&] {
                std::string text;
                for (const auto& p : prompts) text += (text.empty() ? "" : ",") + std::to_string(p.size());
                return text;
              }().c_str(),
              static_cast<long long>(o.graph.cached), static_cast<long long>(o.graph.refreshed),
              static_cast<long long>(steps), o.vs_eager_max, o.vs_alone_rel, o.vs_alone_top1);
  return o;
}

std::shared_ptr<const Model> stories(const char* dtype) {
  return load_model(resolve_model_source(""), parse_run_device("cuda", dtype));
}

// Prompts of 1000, 640 and 300 tokens for the random model (its vocabulary of 512), each its own
// sequence of ids: every one far past the k 64 budget, no two of one length.
std::vector<std::vector<int32_t>> random_prompts() {
  std::vector<std::vector<int32_t>> prompts;
  for (const int64_t length : {1000, 640, 300}) {
    std::vector<int32_t> p(static_cast<size_t>(length));
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int32_t>((i * 37 + 11 + static_cast<size_t>(length)) % 512);
    prompts.push_back(std::move(p));
  }
  return prompts;
}

HipModelParams random_model_hip_params(int64_t dense_layers) {
  HipModelParams params;
  params.hip.k = 64, params.hip.b_q = 16, params.hip.b_k = 2, params.hip.sink = 2, params.hip.window = 4;
  params.dense_layers = dense_layers, params.refresh_every = 3;
  return params;
}

constexpr int64_t kSteps = 10;  // stories15M with r_m 4: refreshes at steps 0, 4 and 8

// Dense in bf16: every step from the graphs (flash over the slots, the key counts on the device).
// In float32 the side declines (flash has no float32) and every step is the eager one.
TEST(BatchDecodeGraphCuda, DenseGraphStepsMatchEagerAndAlone) {
  REQUIRE_BATCH_GRAPHS();
  const testing::MakeBackend make = [] { return std::make_unique<DenseAttention>(); };
  for (const char* dtype : {"bf16", "f32"}) {
    const auto model = stories(dtype);
    const Outcome o = compare_graph_run(model, testing::three_prompts(*model), kSteps, make,
                                        (std::string("stories15M ") + dtype + " dense").c_str());
    const bool bf16 = std::string(dtype) == "bf16";
    EXPECT_EQ(o.graph.cached, bf16 ? kSteps : 0) << dtype;
    EXPECT_EQ(o.graph.refreshed, 0) << dtype;
    if (bf16) {
      EXPECT_LT(o.vs_alone_rel, 2e-2);
      EXPECT_GE(o.vs_alone_top1, 0.9);
    } else {
      EXPECT_LE(o.vs_alone_rel, 1e-4);
    }
  }
}

// HiP on stories15M: the cached steps from the graphs, the refresh steps eager (its head_dim 48 is
// not the few-search mask kernel's). bf16 with l_d 1 (the dense layer's flash inside the graphs
// too); float32 with l_d 0 (the SIMT sparse kernel, no dense layer, which float32 would keep eager).
TEST(BatchDecodeGraphCuda, HipCachedGraphStepsMatchEagerAndAlone) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(BatchDecodeGraph::supported()) << "this CUDA build cannot capture CUDA graphs";
  for (const char* dtype : {"bf16", "f32"}) {
    const auto model = stories(dtype);
    HipModelParams params = testing::small_hip_params();
    const bool bf16 = std::string(dtype) == "bf16";
    if (!bf16) params.dense_layers = 0;
    const int64_t layers = model->config.n_layers;
    const testing::MakeBackend make = [&]() -> std::unique_ptr<AttentionBackend> {
      return std::make_unique<HipAttention>(params, layers);
    };
    const Outcome o = compare_graph_run(model, testing::three_prompts(*model), kSteps, make,
                                        (std::string("stories15M ") + dtype + " HiP l_d " +
                                         std::to_string(params.dense_layers) + " r_m 4").c_str());
    const int64_t refreshes = (kSteps + params.refresh_every - 1) / params.refresh_every;
    EXPECT_EQ(o.graph.cached, kSteps - refreshes) << dtype;
    EXPECT_EQ(o.graph.refreshed, 0) << dtype << ": head_dim 48 refreshes eagerly";
    EXPECT_LT(o.vs_alone_rel, bf16 ? 2e-2 : 1e-3) << dtype;
    EXPECT_GE(o.vs_alone_top1, 0.9) << dtype;
  }
}

// HiP on a model whose refreshes the few-search kernel serves: every step from the graphs, the
// refresh steps (0, 3, 6, 9) with each sequence's mask search inside them, l_d 0 and l_d 1.
TEST(BatchDecodeGraphCuda, HipRefreshGraphStepsMatchEagerAndAlone) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(BatchDecodeGraph::supported()) << "this CUDA build cannot capture CUDA graphs";
  const auto model = random_bf16_model();
  const int64_t steps = 12;
  for (const int64_t dense_layers : {0, 1}) {
    const HipModelParams params = random_model_hip_params(dense_layers);
    const testing::MakeBackend make = [&]() -> std::unique_ptr<AttentionBackend> {
      return std::make_unique<HipAttention>(params, model->config.n_layers);
    };
    const Outcome o = compare_graph_run(model, random_prompts(), steps, make,
                                        ("random bf16 model (head_dim 64) HiP l_d " + std::to_string(dense_layers) + " r_m 3").c_str());
    EXPECT_EQ(o.graph.refreshed, 4) << "l_d " << dense_layers;
    EXPECT_EQ(o.graph.cached, steps - 4) << "l_d " << dense_layers;
    // Random bf16 weights give near-tied scores: the rounding of a product over 3 rows instead of
    // one flips some of a refresh's block picks, which then move the logits further than the
    // rounding itself (measured on an H200: relative L2 0.053 at l_d 0, 0.042 at l_d 1; the eager
    // batched step, which the graphs equal bit for bit, differs from the lone runs by as much).
    EXPECT_LT(o.vs_alone_rel, 0.1) << "l_d " << dense_layers;
    EXPECT_GE(o.vs_alone_top1, 0.9) << "l_d " << dense_layers;
  }
}

// Sequences whose HiP masks refresh at different steps (one of them decoded alone for a step first)
// cannot share a capture: such a step runs eagerly with nothing moved by the declined graph, the
// steps where every sequence reuses its mask replay the cached capture, and the logits stay the
// eager batched run's. With r_m 3, sequence 0 refreshes at batched steps 2 and 5, the others at 0
// and 3: steps 1 and 4 are cached for all.
TEST(BatchDecodeGraphCuda, HipStepsOfMisalignedRefreshesRunEagerly) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(BatchDecodeGraph::supported()) << "this CUDA build cannot capture CUDA graphs";
  const auto model = random_bf16_model();
  const HipModelParams params = random_model_hip_params(0);
  const std::vector<std::vector<int32_t>> prompts = random_prompts();
  auto run = [&](bool graphs, int64_t* graphed) {
    std::vector<int64_t> capacities;
    for (const auto& p : prompts) capacities.push_back(static_cast<int64_t>(p.size()) + 8);
    Transformer transformer(model, 1100);
    transformer.set_decode_graphs(false);
    BatchKVStorage storage(model->config, model->run, capacities);
    std::vector<std::unique_ptr<HipAttention>> hips;
    std::vector<BatchSequence> batch;
    for (size_t i = 0; i < prompts.size(); ++i) {
      hips.push_back(std::make_unique<HipAttention>(params, model->config.n_layers));
      KVCache& cache = storage.slot(static_cast<int64_t>(i));
      transformer.forward(prompts[i], cache, *hips.back());
      batch.push_back({&cache, hips.back().get()});
    }
    // Sequence 0 one step ahead: its refreshes fall one step before the others'.
    transformer.forward({7}, *batch[0].cache, *hips[0], LogitsFor::LastToken, Phase::Decode);
    BatchDecoder decoder(transformer, &storage);
    decoder.set_graphs(graphs);
    std::vector<at::Tensor> out;
    for (int s = 0; s < 6; ++s) out.push_back(decoder.step({static_cast<int32_t>(s + 1), 5, 9}, batch));
    *graphed = decoder.graphed_steps();
    return at::stack(out);
  };
  int64_t graphed = 0, eager_graphed = 0;
  const at::Tensor with_graphs = run(true, &graphed), eager = run(false, &eager_graphed);
  std::printf("[gpu] HiP sequences refreshing at different steps: %lld of 6 batched steps from graphs, max abs diff "
              "to the eager run %.3g\n",
              static_cast<long long>(graphed), (with_graphs - eager).abs().max().item<double>());
  EXPECT_EQ(eager_graphed, 0);
  EXPECT_EQ(graphed, 2) << "steps 1 and 4 from the graphs, the others eager";
  EXPECT_TRUE(with_graphs.equal(eager));
}

// Greedy generate --batch on CUDA (batched steps from the graphs where the side can) gives each
// sequence generate's tokens: float32, where the batched rows round as the single row does (dense
// eager; HiP l_d 0 with its cached steps from the graphs).
TEST(BatchDecodeGraphCuda, GreedyBatchGenerateMatchesGenerate) {
  REQUIRE_CUDA_KERNELS();
  const auto model = stories("f32");
  GenerationOptions options;
  options.max_new_tokens = 12;
  HipModelParams params = testing::small_hip_params();
  params.dense_layers = 0;
  const int64_t layers = model->config.n_layers;
  DenseAttention dense;
  HipAttention alone(params, layers), first(params, layers), second(params, layers);
  const GenerationResult dense_single = generate(model, testing::kStoryOpening, options, dense);
  const BatchGenerationResult dense_batch = generate_batch(model, testing::kStoryOpening, options, {&dense, &dense});
  const GenerationResult hip_single = generate(model, testing::kStoryOpening, options, alone);
  const BatchGenerationResult hip_batch = generate_batch(model, testing::kStoryOpening, options, {&first, &second});
  std::printf("[gpu] stories15M f32 generate --batch 2: dense %lld, HiP %lld batched steps from CUDA graphs\n",
              static_cast<long long>(dense_batch.graphed_steps), static_cast<long long>(hip_batch.graphed_steps));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(dense_batch.generated_ids[i], dense_single.generated_ids) << "dense sequence " << i;
    EXPECT_EQ(hip_batch.generated_ids[i], hip_single.generated_ids) << "HiP sequence " << i;
  }
  EXPECT_GT(hip_batch.graphed_steps, 0) << "HiP's cached steps replay the graphs in float32";
}

}  // namespace
}  // namespace hipstudio
