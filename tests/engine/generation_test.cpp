// The engine against known outputs of stories15M and against itself (cache vs recompute).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/generation/generation.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

using testing::default_model;

TEST(Generation, GreedyOnceUponATimeMatchesLlama2c) {
  DenseAttention dense;
  GenerationOptions options;
  options.max_new_tokens = 24;
  std::string streamed;
  GenerationResult r = generate(default_model(), "Once upon a time", options, dense,
                                [&](const std::string& piece) { streamed += piece; });
  const std::string expected = ", there was a little girl named Lily. She loved to play outside in the sunshine.";
  ASSERT_GE(r.completion.size(), expected.size()) << r.completion;
  EXPECT_EQ(r.completion.substr(0, expected.size()), expected);
  EXPECT_EQ(streamed, r.completion);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 9038, 2501, 263, 931}));
}

// keep_going is asked before the prefill and before every decode step, and false stops the run at
// once: the GUI's cancel relies on both.
TEST(Generation, KeepGoingIsAskedBeforePrefillAndEachStepAndStopsTheRun) {
  DenseAttention dense;
  GenerationOptions options;
  options.max_new_tokens = 6;
  options.stop_at_eos = false;
  int asked = 0;
  options.keep_going = [&] { return ++asked > 0; };
  GenerationResult r = generate(default_model(), "Once upon a time", options, dense);
  EXPECT_EQ(r.generated_ids.size(), 6u);
  EXPECT_EQ(asked, 1 + 6);  // one prefill chunk, six steps

  for (int stop_at : {1, 2, 5}) {
    asked = 0;
    int streamed = 0;
    options.keep_going = [&] { return ++asked < stop_at; };
    EXPECT_THROW(generate(default_model(), "Once upon a time", options, dense, [&](const std::string&) { ++streamed; }),
                 RunCancelled);
    EXPECT_EQ(asked, stop_at);
    EXPECT_LE(streamed, std::max(0, stop_at - 2)) << "tokens after the stop";
  }
}

TEST(Generation, DecodingWithCacheMatchesFullRecompute) {
  auto model = default_model();
  DenseAttention dense;
  const std::vector<int32_t> ids = model->tokenizer->encode("One day, a cat and a dog went to the park to play ball.", true);
  const at::Tensor reference = all_logits(model, ids, dense);  // one prefill: [n, vocab]

  // Prefill the first three tokens, then feed the rest one at a time through the cache.
  Transformer transformer(model, static_cast<int64_t>(ids.size()));
  KVCache cache(model->config, model->run, static_cast<int64_t>(ids.size()));
  at::Tensor first = transformer.forward({ids.begin(), ids.begin() + 3}, cache, dense, LogitsFor::AllTokens);
  std::vector<at::Tensor> rows{first};
  for (size_t i = 3; i < ids.size(); ++i) rows.push_back(transformer.forward({ids[i]}, cache, dense));
  const at::Tensor incremental = at::cat(rows, 0);
  ASSERT_EQ(incremental.sizes(), reference.sizes());
  EXPECT_LT((incremental - reference).abs().max().item<double>(), 1e-4);
  EXPECT_EQ(cache.length(), static_cast<int64_t>(ids.size()));
}

TEST(Generation, ChunkedPrefillMatchesSingleChunk) {
  // A second view of the cache: any split of the prompt gives the same logits.
  auto model = default_model();
  DenseAttention dense;
  const std::vector<int32_t> ids = model->tokenizer->encode("The sun was shining and the birds were singing in the tall trees.", true);
  const at::Tensor reference = all_logits(model, ids, dense);
  Transformer transformer(model, static_cast<int64_t>(ids.size()));
  KVCache cache(model->config, model->run, static_cast<int64_t>(ids.size()));
  const size_t split = ids.size() / 2;
  at::Tensor a = transformer.forward({ids.begin(), ids.begin() + split}, cache, dense, LogitsFor::AllTokens);
  at::Tensor b = transformer.forward({ids.begin() + split, ids.end()}, cache, dense, LogitsFor::AllTokens);
  EXPECT_LT((at::cat({a, b}, 0) - reference).abs().max().item<double>(), 1e-4);
}

// The row-blocked forward pass (CUDA's prefill: norms, projections and MLP in blocks of rows, one
// attention call over all rows) gives the unblocked logits, including after a chunk in the cache.
TEST(Generation, RowBlockedForwardMatchesUnblocked) {
  auto model = default_model();
  DenseAttention dense;
  const std::vector<int32_t> ids = model->tokenizer->encode("The sun was shining and the birds were singing in the tall trees.", true);
  const at::Tensor reference = all_logits(model, ids, dense);
  Transformer transformer(model, static_cast<int64_t>(ids.size()));
  transformer.set_rows_per_block(3);  // blocks that do not divide either chunk
  KVCache cache(model->config, model->run, static_cast<int64_t>(ids.size()));
  const size_t split = 5;
  at::Tensor a = transformer.forward({ids.begin(), ids.begin() + split}, cache, dense, LogitsFor::AllTokens);
  at::Tensor b = transformer.forward({ids.begin() + split, ids.end()}, cache, dense, LogitsFor::AllTokens);
  EXPECT_LT((at::cat({a, b}, 0) - reference).abs().max().item<double>(), 1e-4);
  EXPECT_EQ(cache.length(), static_cast<int64_t>(ids.size()));
}

TEST(Generation, SeededSamplingIsReproducibleAndDiffersAcrossSeeds) {
  DenseAttention dense;
  GenerationOptions options;
  options.max_new_tokens = 20;
  options.stop_at_eos = false;
  options.sampling.temperature = 1.0;
  options.sampling.top_p = 0.95;
  options.sampling.seed = 7;
  auto a = generate(default_model(), "Once upon a time", options, dense);
  auto b = generate(default_model(), "Once upon a time", options, dense);
  options.sampling.seed = 8;
  auto c = generate(default_model(), "Once upon a time", options, dense);
  EXPECT_EQ(a.generated_ids, b.generated_ids);
  EXPECT_NE(a.generated_ids, c.generated_ids);
}

TEST(Perplexity, MatchesLogSoftmaxOfTheLogitsAndIsLowOnModelText) {
  auto model = default_model();
  DenseAttention dense;
  const std::string text = "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.";
  TextScore s = score_text(model, text, dense);
  ASSERT_EQ(s.logprob.size() + 1, s.ids.size());
  // Independent recomputation of one term from raw logits in double.
  const at::Tensor logits = all_logits(model, s.ids, dense).to(at::kDouble);
  const int64_t i = 5;
  const double lse = logits[i].exp().sum().log().item<double>();
  EXPECT_NEAR(s.logprob[i], logits[i][s.ids[i + 1]].item<double>() - lse, 1e-9);
  double mean = 0;
  for (double lp : s.logprob) mean -= lp;
  mean /= static_cast<double>(s.logprob.size());
  EXPECT_NEAR(s.mean_nll, mean, 1e-12);
  EXPECT_NEAR(s.perplexity, std::exp(mean), 1e-9);
  // The model's own greedy continuation is easy for it; shuffled words are not.
  EXPECT_LT(s.perplexity, 4.0);
  TextScore shuffled = score_text(model, "sunshine the girl Lily play named outside loved there a to was She little", dense);
  EXPECT_GT(shuffled.perplexity, 10.0 * s.perplexity);
}

}  // namespace
}  // namespace hipstudio
