// The memory plan of a batch: each sequence's cache at its own length, the largest batch that fits
// (against the plan's own fit test at m and m + 1), the refusal naming it, the bytes a decode step
// must read (against a real KVCache's tensors), and l_d counting full-attention layers only.
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/analysis/context_plan.h"
#include "engine/analysis/memory_estimate.h"
#include "engine/formats/errors.h"
#include "engine/model/kv_cache.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

using testing::default_model;

const RunDevice kCpu = {c10::Device(c10::kCPU), c10::kFloat};

uint64_t tensor_bytes(const at::Tensor& t) { return static_cast<uint64_t>(t.numel() * t.element_size()); }

// What a real cache of `keys` positions holds at every layer, keys and values.
uint64_t cache_bytes(const ModelConfig& c, int64_t keys) {
  const KVCache cache(c, kCpu, keys);
  uint64_t bytes = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) bytes += tensor_bytes(cache.keys(l, keys)) + tensor_bytes(cache.values(l, keys));
  return bytes;
}

uint64_t one_layer_bytes(const ModelConfig& c, int64_t keys) { return cache_bytes(c, keys) / static_cast<uint64_t>(c.n_layers); }

TEST(BatchMemoryPlan, EachSequencesCacheHoldsItsOwnPromptPlusTheNewTokens) {
  const ModelConfig& c = default_model()->config;
  RunMemoryShape mixed;
  mixed.prompt_tokens = 40;
  mixed.new_tokens = 3;
  mixed.prefill_chunk = 40;
  mixed.sequence_prompt_tokens = {40, 7, 12};
  const MemoryEstimate e = estimate_run_memory(c, kCpu, mixed);
  EXPECT_EQ(e.bytes(memory_line::kKvCache), cache_bytes(c, 43) + cache_bytes(c, 10) + cache_bytes(c, 15));
  // The same lengths for all: sequences x one cache, as before.
  RunMemoryShape same = mixed;
  same.sequence_prompt_tokens.clear();
  same.sequences = 3;
  EXPECT_EQ(estimate_run_memory(c, kCpu, same).bytes(memory_line::kKvCache), 3 * cache_bytes(c, 43));
}

TEST(BatchMemoryPlan, LargestFittingBatchIsTheLastCountThePlanAccepts) {
  const ModelConfig& c = default_model()->config;
  RunMemoryShape shape;
  shape.prompt_tokens = 200;
  shape.new_tokens = 8;
  shape.prefill_chunk = 200;
  for (const int64_t target : {1, 5, 37}) {
    shape.sequences = target;
    // Exactly the room `target` sequences need with the margin: they fit, one more does not.
    const double need = static_cast<double>(estimate_run_memory(c, kCpu, shape).needed(MemoryPlace::Host)) * kHeadroom;
    const FreeMemory free{0, static_cast<uint64_t>(need) + 1};
    EXPECT_EQ(largest_fitting_batch(c, kCpu, shape, free, 256), target);
    EXPECT_TRUE(memory_fits(estimate_run_memory(c, kCpu, shape), kCpu, free));
    shape.sequences = target + 1;
    EXPECT_FALSE(memory_fits(estimate_run_memory(c, kCpu, shape), kCpu, free));
    EXPECT_EQ(largest_fitting_batch(c, kCpu, shape, free, 3), std::min<int64_t>(3, target));
  }
  // Not even one sequence.
  EXPECT_EQ(largest_fitting_batch(c, kCpu, shape, FreeMemory{0, 1024}, 256), 0);
}

TEST(BatchMemoryPlan, MixedLengthsFitAsTheLongestPrefixOfTheList) {
  const ModelConfig& c = default_model()->config;
  RunMemoryShape shape;
  shape.prompt_tokens = 200;
  shape.new_tokens = 4;
  shape.prefill_chunk = 200;
  shape.sequence_prompt_tokens = {200, 200, 10};
  const double need = static_cast<double>(estimate_run_memory(c, kCpu, shape).needed(MemoryPlace::Host)) * kHeadroom;
  shape.sequence_prompt_tokens = {200, 200, 10, 200, 10};
  EXPECT_EQ(largest_fitting_batch(c, kCpu, shape, FreeMemory{0, static_cast<uint64_t>(need) + 1}, 256), 3);
  EXPECT_EQ(largest_fitting_batch(c, kCpu, shape, FreeMemory{0, 1ull << 40}, 256), 5);
}

TEST(BatchMemoryPlan, ABatchThatDoesNotFitIsRefusedWithTheLargestThatDoes) {
  const ModelConfig& c = default_model()->config;
  RunMemoryShape shape;
  shape.prompt_tokens = 200;
  shape.new_tokens = 8;
  shape.sequences = 4;
  const uint64_t room = static_cast<uint64_t>(static_cast<double>(estimate_run_memory(c, kCpu, [&] {
                                                                    RunMemoryShape two = shape;
                                                                    two.sequences = 2;
                                                                    two.prefill_chunk = 200;
                                                                    return two;
                                                                  }())
                                                                      .needed(MemoryPlace::Host)) *
                                              kHeadroom) +
                        1;
  std::string message;
  try {
    plan_run(c, kCpu, shape, 0, FreeMemory{0, room});
  } catch (const InputError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("fewer --batch sequences (4 now"), std::string::npos) << message;
  EXPECT_NE(message.find("at 200 prompt tokens + 8 new tokens the largest --batch that fits is 2"), std::string::npos) << message;
  shape.sequences = 2;
  EXPECT_NO_THROW(plan_run(c, kCpu, shape, 0, FreeMemory{0, room}));
}

TEST(BatchMemoryPlan, WeightsNotYetLoadedAreCountedAsStillToAllocate) {
  const ModelConfig& c = default_model()->config;
  RunMemoryShape shape;
  shape.prompt_tokens = 20;
  shape.new_tokens = 2;
  shape.prefill_chunk = 20;
  const uint64_t loaded = estimate_run_memory(c, kCpu, shape).needed(MemoryPlace::Host);
  shape.weights_resident = false;
  EXPECT_EQ(estimate_run_memory(c, kCpu, shape).needed(MemoryPlace::Host), loaded + weight_bytes(c, c10::kFloat));
}

TEST(DecodeReadBytes, DenseReadsEverySequencesWholeCacheAndTheWeightsOnce) {
  const ModelConfig& c = default_model()->config;
  const DecodeReadBytes r = decode_step_read_bytes(c, c10::kFloat, {30, 5, 100}, nullptr);
  EXPECT_EQ(r.weights, weight_bytes(c, c10::kFloat));
  EXPECT_EQ(r.kv, cache_bytes(c, 30) + cache_bytes(c, 5) + cache_bytes(c, 100));
  EXPECT_EQ(r.total(), r.weights + r.kv);
}

TEST(DecodeReadBytes, HipLayersReadTheirSelectionAndTheDenseAndWindowedLayersAsDense) {
  ModelConfig c = default_model()->config;
  ASSERT_GE(c.n_layers, 6);
  c.layer_window.assign(static_cast<size_t>(c.n_layers), 0);
  c.layer_window[1] = 16;
  c.layer_window[3] = 16;
  HipModelParams hip;
  hip.hip.k = 32;
  hip.hip.sink = 4;
  hip.hip.window = 8;
  hip.dense_layers = 1;  // the first full-attention layer (layer 0) stays dense
  for (const int64_t keys : {10, 30, 200}) {
    // Layer 0 dense (all keys), layers 1 and 3 their window, the rest k + sink + window = 44 keys.
    const uint64_t expected = one_layer_bytes(c, keys) + 2 * one_layer_bytes(c, std::min<int64_t>(keys, 16)) +
                              static_cast<uint64_t>(c.n_layers - 3) * one_layer_bytes(c, std::min<int64_t>(keys, 44));
    EXPECT_EQ(decode_step_read_bytes(c, c10::kFloat, {keys}, &hip).kv, expected) << keys << " keys";
    // The dense side: windowed layers still read only their window.
    EXPECT_EQ(decode_step_read_bytes(c, c10::kFloat, {keys}, nullptr).kv,
              static_cast<uint64_t>(c.n_layers - 2) * one_layer_bytes(c, keys) + 2 * one_layer_bytes(c, std::min<int64_t>(keys, 16)));
  }
}

TEST(MemoryEstimate, AccessStreamsCountOnlyTheFullAttentionLayersHipReplaces) {
  ModelConfig c = default_model()->config;
  ASSERT_GE(c.n_layers, 6);
  AnalysisMemoryShape analysis;
  analysis.hip.hip.k = 32;
  analysis.hip.hip.b_k = 2;
  analysis.hip.dense_layers = 1;
  RunMemoryShape shape;
  shape.prompt_tokens = 100;
  shape.new_tokens = 4;
  shape.prefill_chunk = 100;
  shape.analysis = &analysis;
  const uint64_t plain = estimate_run_memory(c, kCpu, shape).bytes(memory_line::kAccessStreams);
  c.layer_window.assign(static_cast<size_t>(c.n_layers), 0);
  c.layer_window[0] = 16;  // windowed: l_d = 1 now keeps layer 1 dense
  c.layer_window[2] = 16;
  const uint64_t windowed = estimate_run_memory(c, kCpu, shape).bytes(memory_line::kAccessStreams);
  // Plain: every layer past layer 0; windowed: the full-attention layers past layer 1.
  ASSERT_GT(plain, 0u);
  EXPECT_EQ(windowed * static_cast<uint64_t>(c.n_layers - 1), plain * static_cast<uint64_t>(c.n_layers - 3));
}

}  // namespace
}  // namespace hipstudio
