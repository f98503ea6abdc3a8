// The batched decode step against each sequence's own batch-1 decode (dense and HiP, sequences of
// different prompts and lengths), generate_batch against generate, and the memory plan of a batch.
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/model/batch_generation.h"
#include "engine/model/batched_decode.h"
#include "engine/model/context_plan.h"
#include "engine/model/generation.h"
#include "engine/model/hip_attention.h"
#include "engine/model/kv_cache.h"
#include "engine/model/memory_estimate.h"
#include "engine/model/transformer.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio {
namespace {

using testing::default_model;

// Three prompts of different lengths (about 150, 95 and 20 tokens): the batch's rows sit at
// different positions, and the two long ones are far past HiP's k = 16 budget.
std::vector<std::vector<int32_t>> three_prompts() {
  const Tokenizer& t = *default_model()->tokenizer;
  return {t.encode(testing::kStory, true), t.encode(testing::kStoryOpening, true),
          t.encode("The little dog ran to the big tree and barked at the bird.", true)};
}

constexpr int64_t kSteps = 6;  // with r_m = 4: refreshed and cached-mask steps both

// A fresh backend per sequence: HiP keeps each sequence's decode masks.
using MakeBackend = std::function<std::unique_ptr<AttentionBackend>()>;

struct Decoded {
  std::vector<std::vector<at::Tensor>> logits;  // (sequence, step) [vocab]
  std::vector<std::vector<int32_t>> fed;        // (sequence, step) the token fed at that step
};

// Each sequence alone: prefill, then kSteps batch-1 decode steps fed its greedy tokens.
Decoded decode_one_by_one(const std::vector<std::vector<int32_t>>& prompts, const MakeBackend& make) {
  auto model = default_model();
  Decoded d;
  for (const std::vector<int32_t>& prompt : prompts) {
    const int64_t capacity = static_cast<int64_t>(prompt.size()) + kSteps;
    Transformer transformer(model, capacity);
    KVCache cache(model->config, model->run, capacity);
    std::unique_ptr<AttentionBackend> backend = make();
    at::Tensor logits = transformer.forward(prompt, cache, *backend);
    d.logits.emplace_back();
    d.fed.emplace_back();
    for (int64_t s = 0; s < kSteps; ++s) {
      const int32_t next = static_cast<int32_t>(logits[0].argmax().item<int64_t>());
      logits = transformer.forward({next}, cache, *backend, LogitsFor::LastToken, Phase::Decode);
      d.fed.back().push_back(next);
      d.logits.back().push_back(logits[0]);
    }
  }
  return d;
}

// The same prompts prefilled one by one, then decoded together with decode_batch, fed the tokens
// the one-by-one run fed (so a rounding-level tie cannot send the two runs apart).
std::vector<std::vector<at::Tensor>> decode_together(const std::vector<std::vector<int32_t>>& prompts,
                                                     const std::vector<std::vector<int32_t>>& fed, const MakeBackend& make) {
  auto model = default_model();
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const int64_t capacity = static_cast<int64_t>(longest) + kSteps;
  Transformer transformer(model, capacity);
  std::vector<std::unique_ptr<KVCache>> caches;
  std::vector<std::unique_ptr<AttentionBackend>> backends;
  std::vector<BatchSequence> batch;
  for (const std::vector<int32_t>& prompt : prompts) {
    caches.push_back(std::make_unique<KVCache>(model->config, model->run, capacity));
    backends.push_back(make());
    transformer.forward(prompt, *caches.back(), *backends.back());
    batch.push_back({caches.back().get(), backends.back().get()});
  }
  std::vector<std::vector<at::Tensor>> out(prompts.size());
  for (int64_t s = 0; s < kSteps; ++s) {
    std::vector<int32_t> tokens;
    for (const auto& f : fed) tokens.push_back(f[static_cast<size_t>(s)]);
    const at::Tensor logits = decode_batch(transformer, tokens, batch);
    EXPECT_EQ(logits.sizes(), (at::IntArrayRef{static_cast<int64_t>(prompts.size()), default_model()->config.vocab_size}));
    for (size_t i = 0; i < prompts.size(); ++i) out[i].push_back(logits[static_cast<int64_t>(i)]);
  }
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(caches[i]->length(), static_cast<int64_t>(prompts[i].size()) + kSteps) << "sequence " << i;
  return out;
}

// Largest |difference| between the batched and the one-by-one logits over every sequence and step.
double max_batch_difference(const MakeBackend& make, Decoded* one_by_one = nullptr) {
  const auto prompts = three_prompts();
  const Decoded alone = decode_one_by_one(prompts, make);
  const auto together = decode_together(prompts, alone.fed, make);
  double worst = 0;
  for (size_t i = 0; i < prompts.size(); ++i)
    for (int64_t s = 0; s < kSteps; ++s)
      worst = std::max(worst, (together[i][static_cast<size_t>(s)] - alone.logits[i][static_cast<size_t>(s)]).abs().max().item<double>());
  if (one_by_one) *one_by_one = alone;
  return worst;
}

TEST(BatchedDecode, DenseLogitsEqualEachSequencesOwnDecode) {
  const double diff = max_batch_difference([] { return std::make_unique<DenseAttention>(); });
  EXPECT_LT(diff, 1e-4);
}

TEST(BatchedDecode, HipLogitsEqualEachSequencesOwnDecode) {
  const HipModelParams params = testing::small_hip_params();
  const int64_t layers = default_model()->config.n_layers;
  Decoded hip_alone;
  const double diff = max_batch_difference([&] { return std::make_unique<HipAttention>(params, layers); }, &hip_alone);
  EXPECT_LT(diff, 1e-4);
  // The HiP budget really sparsifies here: HiP's logits of the long sequence differ from dense's.
  const Decoded dense_alone = decode_one_by_one(three_prompts(), [] { return std::make_unique<DenseAttention>(); });
  EXPECT_GT((hip_alone.logits[0][0] - dense_alone.logits[0][0]).abs().max().item<double>(), 1e-3)
      << "HiP equals dense: the test would not see a mixed-up mask";
}

TEST(BatchedDecode, RefusesACacheTwiceAndMismatchedLists) {
  auto model = default_model();
  Transformer transformer(model, 8);
  KVCache a(model->config, model->run, 8), b(model->config, model->run, 1);
  DenseAttention dense;
  EXPECT_THROW(decode_batch(transformer, {1, 2}, {{&a, &dense}, {&a, &dense}}), std::invalid_argument);
  EXPECT_THROW(decode_batch(transformer, {1}, {{&a, &dense}, {&b, &dense}}), std::invalid_argument);
  b.advance(1);  // full
  EXPECT_THROW(decode_batch(transformer, {1, 2}, {{&a, &dense}, {&b, &dense}}), std::logic_error);
  EXPECT_EQ(a.length(), 0) << "a refused batch advanced a cache";
}

TEST(BatchGeneration, GreedyBatchOfTwoGivesGeneratesTokensForEachSequence) {
  GenerationOptions options;
  options.max_new_tokens = 24;
  DenseAttention dense;
  const GenerationResult single = generate(default_model(), "Once upon a time", options, dense);
  const BatchGenerationResult batch = generate_batch(default_model(), "Once upon a time", options, {&dense, &dense});
  ASSERT_EQ(batch.generated_ids.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(batch.generated_ids[i], single.generated_ids) << "sequence " << i;
    EXPECT_EQ(batch.completions[i], single.completion) << "sequence " << i;
  }
  EXPECT_EQ(batch.completions[0].rfind(", there was a little girl named Lily.", 0), 0u) << batch.completions[0];
  EXPECT_EQ(batch.prompt_ids, single.prompt_ids);
}

TEST(BatchGeneration, HipGreedyBatchMatchesHipGenerate) {
  const HipModelParams params = testing::small_hip_params();
  const int64_t layers = default_model()->config.n_layers;
  GenerationOptions options;
  options.max_new_tokens = 12;
  HipAttention alone(params, layers), first(params, layers), second(params, layers);
  const GenerationResult single = generate(default_model(), testing::kStoryOpening, options, alone);
  const BatchGenerationResult batch = generate_batch(default_model(), testing::kStoryOpening, options, {&first, &second});
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(batch.generated_ids[i], single.generated_ids) << "sequence " << i;
}

TEST(BatchGeneration, SampledSequencesUseTheirOwnSeeds) {
  GenerationOptions options;
  options.max_new_tokens = 16;
  options.sampling.temperature = 1.0;
  options.sampling.seed = 7;
  DenseAttention dense;
  const BatchGenerationResult batch = generate_batch(default_model(), "Once upon a time", options, {&dense, &dense});
  // Sequence 1 samples as a batch-1 run seeded 8 does.
  options.sampling.seed = 8;
  const GenerationResult seeded = generate(default_model(), "Once upon a time", options, dense);
  EXPECT_EQ(batch.generated_ids[1], seeded.generated_ids);
  EXPECT_NE(batch.generated_ids[0], batch.generated_ids[1]) << "both sequences sampled the same stream";
}

TEST(BatchGeneration, MemoryPlanCountsOneKvCachePerSequence) {
  const ModelConfig& c = default_model()->config;
  const RunDevice cpu = {c10::Device(c10::kCPU), c10::kFloat};
  RunMemoryShape one{100, 20, 100, false, nullptr};
  RunMemoryShape eight = one;
  eight.sequences = 8;
  EXPECT_EQ(estimate_run_memory(c, cpu, eight).bytes(memory_line::kKvCache),
            8 * estimate_run_memory(c, cpu, one).bytes(memory_line::kKvCache));
  // A batch whose caches do not fit is refused before any work, naming --batch.
  const uint64_t free_bytes = plan_run(c, cpu, one, 0, FreeMemory{0, uint64_t{1} << 30}).bytes_needed * 2;
  try {
    plan_run(c, cpu, eight, 0, FreeMemory{0, free_bytes});
    ADD_FAILURE() << "eight caches fit in the room of two runs of one?";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fewer --batch sequences (8 now"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hipstudio
