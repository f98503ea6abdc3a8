// HiP inside stories15M: limits where HiP must equal dense, refresh counting, and quality ordering.
#include <cmath>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/generation/generation.h"
#include "engine/backends/hip_attention.h"
#include "engine/analysis/paired_analysis.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio {
namespace {

using testing::default_model;

using testing::kStory;

HipModelParams small_params() { return testing::small_hip_params(); }

TEST(HipModel, BudgetCoveringTheContextEqualsDense) {
  AnalysisOptions o;
  o.hip = small_params();
  o.hip.hip.k = 256;  // >= the 256-token context: every block is always selected
  o.hip.dense_layers = 0;
  PairedAnalysis a = run_paired_analysis(default_model(), kStory, o);
  // Compare the two sides' logits through their NLLs of every token and a direct logits check.
  DenseAttention dense;
  HipAttention hip(o.hip, default_model()->config.n_layers);
  const at::Tensor d = all_logits(default_model(), a.prompt_ids, dense);
  const at::Tensor h = all_logits(default_model(), a.prompt_ids, hip);
  EXPECT_LE((d - h).abs().max().item<double>(), 1e-5);
  for (size_t i = 0; i < a.dense.nll.size(); ++i) EXPECT_NEAR(a.dense.nll[i], a.hip.nll[i], 1e-5);
  for (const LayerQuality& layer : a.layers)
    for (const HeadQuality& head : layer.heads) {
      EXPECT_EQ(head.recall, 1.0);
      EXPECT_NEAR(head.mass, 1.0, 1e-12);
      EXPECT_LT(head.out_rel_err, 1e-12);
    }
  EXPECT_NEAR(a.kl, 0.0, 1e-8);
  EXPECT_EQ(a.top1_agreement, 1.0);
}

TEST(HipModel, AllLayersDenseEqualsDense) {
  HipModelParams p = small_params();
  p.dense_layers = default_model()->config.n_layers;
  DenseAttention dense;
  HipAttention hip(p, default_model()->config.n_layers);
  const auto ids = default_model()->tokenizer->encode(kStory, true);
  EXPECT_TRUE(all_logits(default_model(), ids, dense).equal(all_logits(default_model(), ids, hip)));
}

TEST(HipModel, RefreshCountFollowsRm) {
  for (int64_t rm : {1, 3, 4, 7}) {
    AnalysisOptions o;
    o.hip = small_params();
    o.hip.refresh_every = rm;
    o.decode_steps = 10;
    PairedAnalysis a = run_paired_analysis(default_model(), kStory, o);
    EXPECT_EQ(a.mask_refreshes, (10 + rm - 1) / rm) << "r_m = " << rm;
    for (const DecodeStepRecord& s : a.decode) {
      EXPECT_EQ(s.refreshed, s.step % rm == 0) << "step " << s.step << ", r_m " << rm;
      EXPECT_EQ(s.mask_tokens_accessed > 0, s.refreshed);
      EXPECT_GT(s.sparse_tokens_accessed, 0);
    }
    EXPECT_EQ(a.access.steps, 10);
    EXPECT_EQ(static_cast<int64_t>(a.access.sparse_keys.size()), 10 * a.access.layers * a.access.heads);
  }
}

TEST(HipModel, CachedMaskStepsAttendTheNewTokensThroughTheDenseTail) {
  AnalysisOptions o;
  o.hip = small_params();
  o.hip.refresh_every = 100;  // one refresh, then the mask is reused
  o.decode_steps = 6;
  PairedAnalysis a = run_paired_analysis(default_model(), kStory, o);
  // The sparse key set of a head grows by exactly one key (the new token) per cached step.
  for (int64_t s = 1; s < a.access.steps; ++s)
    for (int64_t h = 0; h < a.access.heads; ++h) {
      const auto& before = a.access.sparse(s - 1, 0, h);
      const auto& now = a.access.sparse(s, 0, h);
      ASSERT_EQ(now.size(), before.size() + 1);
      EXPECT_EQ(now.back(), a.decode[s].position);
      EXPECT_TRUE(std::equal(before.begin(), before.end(), now.begin()));
    }
}

TEST(HipModel, HipPerplexitySitsBetweenDenseAndRandomBlocks) {
  AnalysisOptions o;
  o.hip = small_params();
  PairedAnalysis hip = run_paired_analysis(default_model(), kStory, o);
  o.hip.method = {"random", {{"random_seed", 1.0}}};
  PairedAnalysis random = run_paired_analysis(default_model(), kStory, o);
  EXPECT_GT(hip.hip.ppl, hip.dense.ppl);
  EXPECT_LT(hip.hip.ppl, random.hip.ppl);
  EXPECT_NEAR(hip.dense.ppl, random.dense.ppl, 1e-9);  // same dense side
  // HiP finds more of the oracle's blocks than random choice, on average over sparse layers.
  double hip_recall = 0, random_recall = 0;
  int count = 0;
  for (const LayerQuality& layer : hip.layers)
    for (const HeadQuality& head : layer.heads) {
      hip_recall += head.recall;
      random_recall += head.random_recall;
      ++count;
    }
  EXPECT_GT(hip_recall / count, random_recall / count);
  std::printf("stories15M, k=16 b_q=8 b_k=2 sink=2 window=4 l_d=1: ppl dense %.3f, HiP %.3f, random blocks %.3f; "
              "recall HiP %.3f vs random %.3f; KL %.4f; top-1 %.3f\n",
              hip.dense.ppl, hip.hip.ppl, random.hip.ppl, hip_recall / count, random_recall / count, hip.kl,
              hip.top1_agreement);
}

TEST(HipModel, InvalidParametersNameTheRule) {
  HipModelParams p = small_params();
  p.hip.k = 15;
  try {
    HipAttention hip(p, 6);
    ADD_FAILURE();
  } catch (const hip::HipParamError& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of b_k"), std::string::npos) << e.what();
  }
  p = small_params();
  p.refresh_every = 0;
  EXPECT_THROW(HipAttention(p, 6), hip::HipParamError);
}

}  // namespace
}  // namespace hipstudio
