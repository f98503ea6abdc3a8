// The device dense-probability image's computation (engine/analysis/dense_image_pooling.h), run on the
// CPU here, against the views layer's float64 image (engine/views/dense_view.h): cell for
// cell, unpooled and pooled at sides that do and do not divide the length, NaN where nothing is visible,
// for plain attention and for a windowed, soft-capped rule with its own scale.
#include <gtest/gtest.h>

#include <cmath>

#include <ATen/ATen.h>

#include "engine/analysis/dense_image_pooling.h"
#include "engine/views/dense_view.h"

namespace hipstudio {
namespace {

TEST(DenseImagePooling, EqualsTheCpuImageCellForCell) {
  at::manual_seed(3);
  const int64_t tokens = 37, d = 8;
  const at::Tensor q = at::randn({2, tokens, d}), k = at::randn({1, tokens, d});
  hip::AttentionInputs in;
  in.q = q.data_ptr<float>();
  in.k = k.data_ptr<float>();
  in.v = k.data_ptr<float>();
  in.hq = 2, in.hkv = 1, in.tq = tokens, in.tk = tokens, in.d = d;
  hip::AttentionRule windowed;
  windowed.window = 6;
  windowed.score.scale = 0.9;
  windowed.score.softcap = 1.5;
  for (const hip::AttentionRule& rule : {hip::AttentionRule{}, windowed})
  for (int side : {64, 37, 10, 3})
    for (int64_t head : {0, 1}) {
      SCOPED_TRACE("side " + std::to_string(side) + " head " + std::to_string(head) + " window " + std::to_string(rule.window));
      const PooledProbabilities got = pool_dense_probabilities(q[head], k[0], rule, side);
      const DenseImage want = dense_probability_image(in, rule, head, side);
      ASSERT_EQ(got.rows, want.rows);
      ASSERT_EQ(got.cols, want.cols);
      int nan = 0;
      for (size_t i = 0; i < want.values.size(); ++i) {
        ASSERT_EQ(std::isnan(got.values[i]), std::isnan(want.values[i])) << "cell " << i;
        nan += std::isnan(want.values[i]) ? 1 : 0;
        if (!std::isnan(want.values[i])) {
          EXPECT_NEAR(got.values[i], want.values[i], 1e-6) << "cell " << i;
        }
      }
      if (side >= 10) {
        EXPECT_GT(nan, 0) << "no future cells: the causal mask was not exercised";
      }
    }
}

}  // namespace
}  // namespace hipstudio
