#pragma once
// What the batched step's layer timer must not change (CPU and GPU tests): the same sequences
// decoded together twice, once untimed and once with decode_batch's timer, give the same logits
// bit for bit (the timer only waits for the device), and the timer sees every layer of every step.
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/generation/batched_decode.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "tests/engine/batch_decode_check.h"

namespace hipstudio::testing {

inline void expect_timer_leaves_logits_unchanged(const std::shared_ptr<const Model>& model, int64_t steps,
                                                 const MakeBackend& make) {
  const std::vector<std::vector<int32_t>> prompts = three_prompts(*model);
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const int64_t capacity = static_cast<int64_t>(longest) + steps;
  std::vector<std::vector<at::Tensor>> runs(2);  // (timed) every step's logits [N, vocab]
  std::vector<int64_t> timed_layers;             // the layers the timer saw, in order
  for (const bool timed : {false, true}) {
    Transformer transformer(model, capacity);
    std::vector<std::unique_ptr<KVCache>> caches;
    std::vector<std::unique_ptr<AttentionBackend>> backends;
    std::vector<BatchSequence> batch;
    std::vector<int32_t> tokens;
    for (const std::vector<int32_t>& prompt : prompts) {
      caches.push_back(std::make_unique<KVCache>(model->config, model->run, capacity));
      backends.push_back(make());
      const at::Tensor logits = transformer.forward(prompt, *caches.back(), *backends.back());
      tokens.push_back(static_cast<int32_t>(logits[0].argmax().item<int64_t>()));
      batch.push_back({caches.back().get(), backends.back().get()});
    }
    Transformer::LayerTimer timer;
    if (timed)
      timer = [&](int64_t layer, double attention_s, double other_s) {
        EXPECT_GE(attention_s, 0.0);
        EXPECT_GE(other_s, 0.0);
        timed_layers.push_back(layer);
      };
    for (int64_t s = 0; s < steps; ++s) {
      // Both runs are fed the untimed run's greedy tokens: at step 0 both have the prefills' (the
      // same numbers), after it the untimed step's before.
      if (timed && s > 0) {
        const at::Tensor next = runs[0][static_cast<size_t>(s - 1)].argmax(-1);
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(next[static_cast<int64_t>(i)].item<int64_t>());
      }
      const at::Tensor logits = decode_batch(transformer, tokens, batch, timer);
      runs[timed ? 1 : 0].push_back(logits);
      if (!timed) {
        const at::Tensor next = logits.argmax(-1);
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(next[static_cast<int64_t>(i)].item<int64_t>());
      }
    }
  }
  ASSERT_EQ(runs[1].size(), runs[0].size());
  for (size_t s = 0; s < runs[0].size(); ++s) EXPECT_TRUE(at::equal(runs[1][s], runs[0][s])) << "step " << s;
  ASSERT_EQ(static_cast<int64_t>(timed_layers.size()), steps * model->config.n_layers);
  for (size_t i = 0; i < timed_layers.size(); ++i)
    EXPECT_EQ(timed_layers[i], static_cast<int64_t>(i) % model->config.n_layers);
}

}  // namespace hipstudio::testing
