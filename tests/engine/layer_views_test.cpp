// The views layer's tensor implementation (LibTorch ops, here on the CPU) against its float64
// reference, over the shared table of cases: float32 inputs give identical masks and oracle and
// metrics to rounding; bf16 inputs stay within bf16's tolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "engine/analysis/host_inputs.h"
#include "engine/views/reference_views.h"
#include "kernels/random_baseline.h"
#include "tests/engine/layer_views_cases.h"

namespace hipstudio {
namespace {

using testing::LayerViewsCase;

void expect_same_masks(const LayerMaskViews& a, const LayerMaskViews& b, const std::string& name) {
  EXPECT_EQ(a.hip.blocks, b.hip.blocks) << name;
  EXPECT_EQ(a.hip.counts, b.hip.counts) << name;
  EXPECT_EQ(a.hip.dense_from, b.hip.dense_from) << name;
  EXPECT_EQ(a.oracle.blocks, b.oracle.blocks) << name;
  EXPECT_EQ(a.oracle.counts, b.oracle.counts) << name;
  EXPECT_EQ(a.random.blocks, b.random.blocks) << name;
  ASSERT_EQ(a.recall.size(), b.recall.size()) << name;
  for (size_t i = 0; i < a.recall.size(); ++i) {
    EXPECT_NEAR(a.recall[i], b.recall[i], 1e-12) << name << " block " << i;
    EXPECT_NEAR(a.random_recall[i], b.random_recall[i], 1e-12) << name << " block " << i;
  }
}

void expect_quality_near(const LayerQuality& a, const LayerQuality& b, double recall_tol, double tol, const std::string& name) {
  ASSERT_EQ(a.heads.size(), b.heads.size()) << name;
  EXPECT_EQ(a.layer, b.layer);
  for (size_t h = 0; h < a.heads.size(); ++h) {
    const HeadQuality &x = a.heads[h], &y = b.heads[h];
    EXPECT_NEAR(x.recall, y.recall, recall_tol) << name << " head " << h;
    EXPECT_NEAR(x.random_recall, y.random_recall, recall_tol) << name << " head " << h;
    EXPECT_NEAR(x.mass, y.mass, tol) << name << " head " << h;
    EXPECT_NEAR(x.random_mass, y.random_mass, tol) << name << " head " << h;
    EXPECT_NEAR(x.out_rel_err, y.out_rel_err, tol) << name << " head " << h;
    EXPECT_NEAR(x.random_out_rel_err, y.random_out_rel_err, tol) << name << " head " << h;
  }
}

at::Tensor no_mask(const at::Tensor&, const at::Tensor&) { return at::Tensor(); }

TEST(LayerViews, TensorImplementationMatchesTheReferenceInFloat32) {
  for (const LayerViewsCase& c : testing::layer_views_cases()) {
    const auto in = testing::layer_views_inputs(c, 5);
    const LayerViewsResult ref = compute_layer_views(in.q, in.k, in.v, testing::layer_views_setup(c), /*use_reference=*/true);
    const LayerViewsResult got = testing::tensor_views_in_chunks(c, in.q, in.k, in.v, no_mask);
    ASSERT_TRUE(ref.has_masks && got.has_masks) << c.name;
    expect_same_masks(got.masks, ref.masks, c.name);
    expect_quality_near(got.quality, ref.quality, 1e-12, 1e-9, c.name);
    // The case means something: HiP searched, and a random mask recalls less than HiP.
    if (c.params.k < c.tokens) {
      EXPECT_LT(ref.quality.heads[0].random_recall, 1.0) << c.name;
    }
  }
}

TEST(LayerViews, TiedBlockScoresGoToTheSmallerBlock) {
  const LayerViewsCase c = testing::layer_views_cases()[2];
  ASSERT_GT(c.tied_blocks, 0);
  const auto in = testing::layer_views_inputs(c, 9);
  const LayerViewsResult got = testing::tensor_views_in_chunks(c, in.q, in.k, in.v, no_mask);
  // Block j + 1 is a copy of block j (j = 3i + 1): equal scores. Where the oracle keeps one of the
  // two, it must be j; the case is only meaningful if that happens somewhere.
  const hip::MaskResult& o = got.masks.oracle;
  int64_t split = 0;
  for (int64_t h = 0; h < o.heads; ++h)
    for (int64_t qb = 0; qb < o.query_blocks; ++qb) {
      const std::vector<int32_t> row(o.row(h, qb), o.row(h, qb) + o.count(h, qb));
      auto has = [&](int32_t b) { return std::find(row.begin(), row.end(), b) != row.end(); };
      for (int64_t i = 0; i < c.tied_blocks; ++i) {
        const int32_t j = static_cast<int32_t>(3 * i + 1);
        if (has(j) != has(j + 1)) {
          ++split;
          EXPECT_TRUE(has(j)) << "head " << h << ", query block " << qb << ": block " << j + 1 << " kept over its equal " << j;
        }
      }
    }
  EXPECT_GT(split, 0) << "no tied pair was split by the budget: the case does not test the rule";
}

TEST(LayerViews, Bf16InputsStayWithinBf16Tolerance) {
  for (const LayerViewsCase& c : testing::layer_views_cases()) {
    const auto in = testing::layer_views_inputs(c, 7);
    const at::Tensor q = in.q.to(at::kBFloat16), k = in.k.to(at::kBFloat16), v = in.v.to(at::kBFloat16);
    const LayerViewsResult ref = compute_layer_views(q, k, v, testing::layer_views_setup(c), true);
    const LayerViewsResult got = testing::tensor_views_in_chunks(c, q, k, v, no_mask);
    // float32 scores of bf16 values: a near-tie may flip one block of a query block.
    expect_quality_near(got.quality, ref.quality, 0.02, 2e-3, c.name);
  }
}

TEST(LayerViews, ChunksAndTilesDoNotChangeTheResult) {
  LayerViewsCase c = testing::layer_views_cases()[0];
  const auto in = testing::layer_views_inputs(c, 3);
  const LayerViewsResult chunked = testing::tensor_views_in_chunks(c, in.q, in.k, in.v, no_mask);
  c.chunk = 0;
  c.tile_bytes = 0;
  const LayerViewsResult whole = testing::tensor_views_in_chunks(c, in.q, in.k, in.v, no_mask);
  expect_same_masks(chunked.masks, whole.masks, "chunked vs whole");
  expect_quality_near(chunked.quality, whole.quality, 1e-12, 1e-12, "chunked vs whole");
}

TEST(LayerViews, RandomBaselineFollowsTheOneSeedingRule) {
  const LayerViewsCase c = testing::layer_views_cases()[1];
  const auto in = testing::layer_views_inputs(c, 1);
  const LayerViewsSetup setup = testing::layer_views_setup(c);
  const HostAttentionInputs host(in.q, in.k, in.v);
  const hip::MaskResult expected = hip::random_masks(host.view, c.params, setup.seed + static_cast<uint64_t>(setup.layer));
  for (bool reference : {true, false}) {
    const LayerViewsResult r = compute_layer_views(in.q, in.k, in.v, setup, reference);
    EXPECT_EQ(r.masks.random.blocks, expected.blocks) << (reference ? "reference" : "tensor");
  }
  EXPECT_NE(hip::random_masks(host.view, c.params, setup.seed).blocks, expected.blocks) << "the layer must change the draw";
}

}  // namespace
}  // namespace hipstudio
