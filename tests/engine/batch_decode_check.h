#pragma once
// What the batched-decode tests (CPU and GPU) compare: N sequences each decoded alone with batch-1
// steps, and the same sequences decoded together with decode_batch, fed the same tokens.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/generation/batch_kv_storage.h"
#include "engine/generation/batched_decode.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio::testing {

// Three prompts of different lengths (about 150, 95 and 15 tokens): the batch's rows sit at different
// positions, and the two long ones are far past small_hip_params' k = 16 budget.
inline std::vector<std::vector<int32_t>> three_prompts(const Model& model) {
  const Tokenizer& t = *model.tokenizer;
  return {t.encode(kStory, true), t.encode(kStoryOpening, true),
          t.encode("The little dog ran to the big tree and barked at the bird.", true)};
}

// A fresh backend per sequence: HiP keeps each sequence's decode masks.
using MakeBackend = std::function<std::unique_ptr<AttentionBackend>()>;

// How the batched run holds its caches and attends (compare_batched_with_alone).
enum class BatchLayout {
  kOwnCaches,         // a KVCache each; every sequence attends through its own backend
  kSlotsEachAlone,    // slots of one BatchKVStorage (of each sequence's own capacity), attending per sequence
  kSlotsOneCall,      // the same slots handed to decode_batch: one attention call a layer where the backend can
};

struct BatchComparison {
  std::vector<std::vector<at::Tensor>> alone, together;  // (sequence, step) float32 CPU logits [vocab]
  int64_t fewest_one_call_layers = 0;  // over the batched steps, the fewest layers attended in one call

  double max_abs_diff() const {
    double worst = 0;
    for (size_t i = 0; i < alone.size(); ++i)
      for (size_t s = 0; s < alone[i].size(); ++s)
        worst = std::max(worst, (together[i][s] - alone[i][s]).abs().max().item<double>());
    return worst;
  }
  // |together - alone| / |alone| over every sequence and step (L2 norms).
  double relative_l2() const {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < alone.size(); ++i)
      for (size_t s = 0; s < alone[i].size(); ++s) {
        diff += (together[i][s] - alone[i][s]).pow(2).sum().item<double>();
        norm += alone[i][s].pow(2).sum().item<double>();
      }
    return std::sqrt(diff / std::max(norm, 1e-30));
  }
  // Share of (sequence, step) whose greedy token is the same both ways.
  double top1_agreement() const {
    int64_t same = 0, all = 0;
    for (size_t i = 0; i < alone.size(); ++i)
      for (size_t s = 0; s < alone[i].size(); ++s, ++all)
        same += together[i][s].argmax().item<int64_t>() == alone[i][s].argmax().item<int64_t>();
    return all ? static_cast<double>(same) / static_cast<double>(all) : 0.0;
  }
};

// Each prompt alone (prefill, then `steps` batch-1 decode steps fed its greedy tokens), then all of
// them prefilled one by one and decoded together with decode_batch, fed the tokens the lone runs fed
// (so a rounding-level tie cannot send the two runs apart), their caches as `layout` says. Checks
// every cache's length at the end.
inline BatchComparison compare_batched_with_alone(const std::shared_ptr<const Model>& model,
                                                  const std::vector<std::vector<int32_t>>& prompts, int64_t steps,
                                                  const MakeBackend& make,
                                                  BatchLayout layout = BatchLayout::kOwnCaches) {
  BatchComparison c;
  std::vector<std::vector<int32_t>> fed;
  for (const std::vector<int32_t>& prompt : prompts) {
    const int64_t capacity = static_cast<int64_t>(prompt.size()) + steps;
    Transformer transformer(model, capacity);
    KVCache cache(model->config, model->run, capacity);
    std::unique_ptr<AttentionBackend> backend = make();
    at::Tensor logits = transformer.forward(prompt, cache, *backend);
    c.alone.emplace_back();
    fed.emplace_back();
    for (int64_t s = 0; s < steps; ++s) {
      const int32_t next = static_cast<int32_t>(logits[0].argmax().item<int64_t>());
      logits = transformer.forward({next}, cache, *backend, LogitsFor::LastToken, Phase::Decode);
      fed.back().push_back(next);
      c.alone.back().push_back(logits[0]);
    }
  }

  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const int64_t capacity = static_cast<int64_t>(longest) + steps;
  Transformer transformer(model, capacity);
  std::vector<int64_t> capacities;  // the slots' own sizes: they differ, as a mixed batch's do
  for (const auto& p : prompts) capacities.push_back(static_cast<int64_t>(p.size()) + steps);
  const bool slots = layout != BatchLayout::kOwnCaches;
  std::unique_ptr<BatchKVStorage> storage =
      slots ? std::make_unique<BatchKVStorage>(model->config, model->run, capacities) : nullptr;
  std::vector<std::unique_ptr<KVCache>> caches;
  std::vector<std::unique_ptr<AttentionBackend>> backends;
  std::vector<BatchSequence> batch;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (!slots) caches.push_back(std::make_unique<KVCache>(model->config, model->run, capacity));
    KVCache& cache = slots ? storage->slot(static_cast<int64_t>(i)) : *caches.back();
    backends.push_back(make());
    transformer.forward(prompts[i], cache, *backends.back());
    batch.push_back({&cache, backends.back().get()});
  }
  c.together.resize(prompts.size());
  c.fewest_one_call_layers = model->config.n_layers;
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<int32_t> tokens;
    for (const auto& f : fed) tokens.push_back(f[static_cast<size_t>(s)]);
    int64_t one_call = 0;
    const at::Tensor logits = decode_batch(transformer, tokens, batch, {},
                                           layout == BatchLayout::kSlotsOneCall ? storage.get() : nullptr, &one_call);
    c.fewest_one_call_layers = std::min(c.fewest_one_call_layers, one_call);
    EXPECT_EQ(logits.sizes(), (at::IntArrayRef{static_cast<int64_t>(prompts.size()), model->config.vocab_size}));
    for (size_t i = 0; i < prompts.size(); ++i) c.together[i].push_back(logits[static_cast<int64_t>(i)]);
  }
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(batch[i].cache->length(), static_cast<int64_t>(prompts[i].size()) + steps) << "sequence " << i;
  return c;
}

}  // namespace hipstudio::testing
