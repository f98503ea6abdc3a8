// The attention soft-cap (kernels/score_transform.h) in the CPU reference: HiP's tree search ranks
// the same branches whether it scores raw dot products or capped logits (the cap is monotonic), so
// the model's search, which ranks raw dot products, stays valid on a soft-capped layer; the capped
// sparse attention with every block selected equals capped dense attention; the default transform
// is today's arithmetic.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "kernels/attention_metrics.h"
#include "kernels/mask_reference.h"
#include "kernels/sparse_attention_reference.h"
#include "tests/kernels/hip_test_inputs.h"

namespace hipstudio::hip {
namespace {

HipParams search_params() {
  HipParams p;
  p.k = 32;
  p.b_q = 16;
  p.b_k = 4;
  p.sink = 4;
  p.window = 8;
  return p;
}

TEST(SoftCap, MasksAreTheSameWithAndWithoutACap) {
  // Scores of Gaussian q, k with d 64 reach |dot| ~ 30: caps below, around and above them.
  const testing::OwnedInputs o = testing::random_inputs(4, 2, 256, 256, 64, 11);
  const HipParams p = search_params();
  const MaskResult raw = estimate_masks_reference(o.view(false), p).mask;
  for (const ScoreTransform t : {ScoreTransform{0.0, 1.0}, ScoreTransform{0.0, 5.0}, ScoreTransform{0.0, 50.0},
                                 ScoreTransform{1.0 / 24.0, 5.0}, ScoreTransform{0.3, 0.0}}) {
    MaskOptions options;
    options.score = t;
    const MaskResult capped = estimate_masks_reference(o.view(false), p, options).mask;
    EXPECT_EQ(capped.blocks, raw.blocks) << "scale " << t.scale << ", cap " << t.softcap;
    EXPECT_EQ(capped.counts, raw.counts) << "scale " << t.scale << ", cap " << t.softcap;
    EXPECT_EQ(capped.iterations, raw.iterations);
  }
}

TEST(SoftCap, SparseWithEveryBlockEqualsDenseUnderTheCap) {
  const testing::OwnedInputs o = testing::random_inputs(4, 2, 64, 64, 32, 5);
  HipParams p = search_params();
  p.k = 64;  // >= every query's keys: all blocks selected
  const MaskResult mask = estimate_masks_reference(o.view(false), p).mask;
  const ScoreTransform capped{1.0 / std::sqrt(24.0), 2.0};
  const AttentionOutput sparse = sparse_attention_reference(o.view(), p, mask, 0, capped);
  const AttentionOutput dense = dense_attention_reference(o.view(), p, 0, capped);
  const AttentionOutput uncapped = dense_attention_reference(o.view(), p);
  double diff = 0, moved = 0;
  for (size_t i = 0; i < dense.out.size(); ++i) {
    diff = std::max(diff, std::abs(sparse.out[i] - dense.out[i]));
    moved = std::max(moved, std::abs(uncapped.out[i] - dense.out[i]));
  }
  EXPECT_LT(diff, 1e-12);
  EXPECT_GT(moved, 1e-3) << "the cap changes the output";
}

TEST(SoftCap, DefaultTransformIsPlainAttention) {
  const testing::OwnedInputs o = testing::random_inputs(2, 1, 32, 32, 16, 3);
  const HipParams p = search_params();
  const AttentionOutput plain = dense_attention_reference(o.view(), p);
  const AttentionOutput explicit_scale = dense_attention_reference(o.view(), p, 0, ScoreTransform{0.25, 0.0});
  EXPECT_EQ(plain.out, explicit_scale.out);  // 0.25 = 1 / sqrt(16): the same products
  // A cap far above every score changes nothing beyond rounding.
  const AttentionOutput loose = dense_attention_reference(o.view(), p, 0, ScoreTransform{0.0, 1e6});
  for (size_t i = 0; i < plain.out.size(); ++i) EXPECT_NEAR(plain.out[i], loose.out[i], 1e-9);
}

TEST(SoftCap, AttentionMassFollowsTheTransform) {
  const testing::OwnedInputs o = testing::random_inputs(2, 1, 128, 128, 32, 5);
  const HipParams p = search_params();
  const MaskResult m = estimate_masks_reference(o.view(), p).mask;
  const std::vector<AttentionMass> plain = attention_mass(o.view(), p, {&m});
  // An explicit 1 / sqrt(d) is the default: the same bits.
  EXPECT_EQ(attention_mass(o.view(), p, {&m}, 0, ScoreTransform{1.0 / std::sqrt(32.0), 0.0})[0].per_query, plain[0].per_query);
  // A hard cap flattens the softmax: the mask keeps a different share.
  const std::vector<AttentionMass> capped = attention_mass(o.view(), p, {&m}, 0, ScoreTransform{0.0, 0.5});
  double moved = 0;
  for (size_t i = 0; i < plain[0].per_query.size(); ++i)
    moved = std::max(moved, std::abs(capped[0].per_query[i] - plain[0].per_query[i]));
  EXPECT_GT(moved, 1e-3) << "attention_mass ignored the soft-cap";
}

}  // namespace
}  // namespace hipstudio::hip
