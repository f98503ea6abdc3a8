// The batched decode step against each sequence's own batch-1 decode (dense and HiP, sequences of
// different prompts and lengths), generate_batch against generate, and the memory plan of a batch.
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/generation/batch_generation.h"
#include "engine/generation/batch_kv_storage.h"
#include "engine/generation/batched_decode.h"
#include "engine/analysis/context_plan.h"
#include "engine/generation/generation.h"
#include "engine/backends/hip_attention.h"
#include "engine/model/kv_cache.h"
#include "engine/analysis/memory_estimate.h"
#include "engine/model/transformer.h"
#include "tests/engine/batch_decode_check.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio {
namespace {

using testing::default_model;

constexpr int64_t kSteps = 6;  // with r_m = 4: refreshed and cached-mask steps both

testing::BatchComparison compare(const testing::MakeBackend& make) {
  return testing::compare_batched_with_alone(default_model(), testing::three_prompts(*default_model()), kSteps, make);
}

TEST(BatchedDecode, DenseLogitsEqualEachSequencesOwnDecode) {
  EXPECT_LT(compare([] { return std::make_unique<DenseAttention>(); }).max_abs_diff(), 1e-4);
}

TEST(BatchedDecode, HipLogitsEqualEachSequencesOwnDecode) {
  const HipModelParams params = testing::small_hip_params();
  const int64_t layers = default_model()->config.n_layers;
  const testing::BatchComparison hip = compare([&] { return std::make_unique<HipAttention>(params, layers); });
  EXPECT_LT(hip.max_abs_diff(), 1e-4);
  // The HiP budget really sparsifies here: HiP's logits of the long sequence differ from dense's.
  const testing::BatchComparison dense = compare([] { return std::make_unique<DenseAttention>(); });
  EXPECT_GT((hip.alone[0][0] - dense.alone[0][0]).abs().max().item<double>(), 1e-3)
      << "HiP equals dense: the test would not see a mixed-up mask";
}

// Slots of one storage (each of its own capacity) hold the same numbers as caches of their own: on
// the CPU no backend attends the batch in one call, each sequence attends its slot's views, and the
// logits are those of own caches bit for bit (a slot read or written at another slot's rows would
// change them), dense and HiP.
TEST(BatchedDecode, SlotsOfOneStorageGiveTheOwnCachesLogits) {
  const HipModelParams params = testing::small_hip_params();
  const int64_t layers = default_model()->config.n_layers;
  const std::vector<testing::MakeBackend> sides = {
      [] { return std::make_unique<DenseAttention>(); },
      [&] { return std::make_unique<HipAttention>(params, layers); }};
  for (const testing::MakeBackend& make : sides) {
    const auto prompts = testing::three_prompts(*default_model());
    const testing::BatchComparison own = testing::compare_batched_with_alone(default_model(), prompts, kSteps, make);
    const testing::BatchComparison slots = testing::compare_batched_with_alone(
        default_model(), prompts, kSteps, make, testing::BatchLayout::kSlotsOneCall);
    EXPECT_EQ(slots.fewest_one_call_layers, 0) << "a CPU backend claimed to attend the batch in one call";
    for (size_t i = 0; i < prompts.size(); ++i)
      for (int64_t s = 0; s < kSteps; ++s)
        EXPECT_TRUE(slots.together[i][static_cast<size_t>(s)].equal(own.together[i][static_cast<size_t>(s)]))
            << "sequence " << i << " step " << s;
    EXPECT_LT(slots.max_abs_diff(), 1e-4);
  }
}

TEST(BatchKVStorage, SlotsAreViewsOfTheirOwnRows) {
  const ModelConfig& c = default_model()->config;
  BatchKVStorage storage(c, default_model()->run, {5, 3, 7});
  EXPECT_EQ(storage.rows(), 15);
  EXPECT_EQ(storage.start(2), 8);
  EXPECT_EQ(storage.slot(1).capacity(), 3);
  storage.keys(0).zero_();
  const at::Tensor k = at::ones({c.n_kv_heads, 2, c.head_dim});
  storage.slot(1).append(0, k, k);
  // Slot 1's rows [5, 8): its positions 0 and 1 are rows 5 and 6 of the layer's tensor, nothing else.
  EXPECT_EQ(storage.keys(0).sum().item<double>(), static_cast<double>(k.numel()));
  EXPECT_TRUE(storage.keys(0).narrow(1, 5, 2).equal(k));
  EXPECT_EQ(storage.slot_of(storage.slot(2)), 2);
  KVCache other(c, default_model()->run, 4);
  EXPECT_EQ(storage.slot_of(other), -1);
  EXPECT_THROW(BatchKVStorage(c, default_model()->run, {4, 0}), std::invalid_argument);
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
