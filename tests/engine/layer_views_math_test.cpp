// The views layer under a layer's attention maths (ViewsMath: scale, soft-cap, window): the float64
// reference's attention mass against a brute-force LibTorch float64 softmax of the capped scores;
// plain maths giving kernels' bits; a wrong scale or a missing cap changing the numbers; and a
// windowed layer saying so (NaN numbers) instead of showing HiP's, on both implementations.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/analysis/host_inputs.h"
#include "engine/views/reference_views.h"
#include "kernels/attention_metrics.h"
#include "kernels/key_set.h"
#include "tests/engine/layer_views_cases.h"

namespace hipstudio {
namespace {

using testing::LayerViewsCase;

LayerViewsCase gemma_like_case() {
  for (const LayerViewsCase& c : testing::layer_views_cases())
    if (c.math.score.softcap > 0.0) return c;
  ADD_FAILURE() << "the table has no soft-capped case";
  return {};
}

// Per-head mass of `mask` from P = softmax(softcap(scale Q K^T)) formed densely in float64 with
// LibTorch (causal), summed over hip::attended_keys: an independent route to the same definition.
std::vector<double> brute_force_mass(const testing::LayerViewsInputs& in, const hip::HipParams& p, double scale,
                                     double cap, const hip::MaskResult& mask) {
  const HostAttentionInputs host(in.q, in.k, in.v);
  const int64_t hq = in.q.size(0), T = in.q.size(1), group = hq / in.k.size(0);
  std::vector<double> per_head(static_cast<size_t>(hq), 0.0);
  std::vector<int64_t> keys;
  for (int64_t h = 0; h < hq; ++h) {
    at::Tensor s = at::matmul(in.q[h].to(at::kDouble), in.k[h / group].to(at::kDouble).t()) * scale;
    if (cap > 0.0) s = cap * at::tanh(s / cap);
    s = s.masked_fill(at::ones({T, T}, at::kBool).triu(1), -INFINITY);
    const at::Tensor prob = at::softmax(s, -1).contiguous();
    const double* P = prob.data_ptr<double>();
    for (int64_t i = 0; i < T; ++i) {
      hip::attended_keys(host.view, p, mask, h, i, keys);
      double m = 0;
      for (int64_t key : keys) m += P[i * T + key];
      per_head[static_cast<size_t>(h)] += m / static_cast<double>(T);
    }
  }
  return per_head;
}

TEST(LayerViewsMath, MassFollowsTheLayersScaleAndSoftcap) {
  const LayerViewsCase c = gemma_like_case();
  const auto in = testing::layer_views_inputs(c, 21);
  const HostAttentionInputs host(in.q, in.k, in.v);
  const LayerMaskViews masks = reference_layer_masks(host.view, c.params, c.math, 11, 3);
  const std::vector<hip::AttentionMass> got = reference_attention_mass(host.view, c.params, c.math, {&masks.oracle});
  const std::vector<double> expected =
      brute_force_mass(in, c.params, c.math.score.scale, c.math.score.softcap, masks.oracle);
  // The property: the oracle top-k's mass with the cap differs from the mass under plain scores
  // (1 / sqrt(d), no cap), so a views layer that dropped the maths would fail the check above.
  const std::vector<double> plain = brute_force_mass(in, c.params, 1.0 / std::sqrt(static_cast<double>(c.dim)), 0.0, masks.oracle);
  double moved = 0;
  for (int64_t h = 0; h < c.hq; ++h) {
    EXPECT_NEAR(got[0].per_head[h], expected[h], 1e-12) << "head " << h;
    moved = std::max(moved, std::abs(expected[h] - plain[h]));
  }
  EXPECT_GT(moved, 1e-3) << "the case's cap and scale do not change the mass: it tests nothing";
  // A wrong scale alone (the cap kept) breaks it too.
  const std::vector<double> wrong_scale =
      brute_force_mass(in, c.params, 2.0 * c.math.score.scale, c.math.score.softcap, masks.oracle);
  double scale_moved = 0;
  for (int64_t h = 0; h < c.hq; ++h) scale_moved = std::max(scale_moved, std::abs(got[0].per_head[h] - wrong_scale[h]));
  EXPECT_GT(scale_moved, 1e-3);
}

TEST(LayerViewsMath, PlainMathsGiveTheKernelsBits) {
  const LayerViewsCase c = testing::layer_views_cases()[0];
  ASSERT_FALSE(c.math.windowed() || c.math.score.softcap > 0.0 || c.math.score.scale > 0.0);
  const auto in = testing::layer_views_inputs(c, 4);
  const HostAttentionInputs host(in.q, in.k, in.v);
  const LayerMaskViews masks = reference_layer_masks(host.view, c.params, c.math, 11, 3);
  const auto views = reference_attention_mass(host.view, c.params, c.math, {&masks.hip, &masks.random});
  const auto kernels = hip::attention_mass(host.view, c.params, {&masks.hip, &masks.random});
  for (size_t m = 0; m < 2; ++m) EXPECT_EQ(views[m].per_query, kernels[m].per_query) << "mask " << m;
  // An explicit 1 / sqrt(d) is the same scale: the same bits.
  ViewsMath explicit_scale;
  explicit_scale.score.scale = 1.0 / std::sqrt(static_cast<double>(c.dim));
  EXPECT_EQ(reference_attention_mass(host.view, c.params, explicit_scale, {&masks.hip})[0].per_query, kernels[0].per_query);
}

TEST(LayerViewsMath, SoftcapLeavesTheMasksAndChangesTheOutputError) {
  const LayerViewsCase c = gemma_like_case();
  const auto in = testing::layer_views_inputs(c, 8);
  LayerViewsCase plain = c;
  plain.math = ViewsMath{};
  for (bool reference : {true, false}) {
    const LayerViewsResult capped = compute_layer_views(in.q, in.k, in.v, testing::layer_views_setup(c), reference);
    const LayerViewsResult uncapped = compute_layer_views(in.q, in.k, in.v, testing::layer_views_setup(plain), reference);
    // The search and the oracle rank raw dot products: monotonic maths select the same blocks.
    EXPECT_EQ(capped.masks.hip.blocks, uncapped.masks.hip.blocks);
    EXPECT_EQ(capped.masks.oracle.blocks, uncapped.masks.oracle.blocks);
    double moved = 0;
    for (size_t h = 0; h < capped.quality.heads.size(); ++h)
      moved = std::max(moved, std::abs(capped.quality.heads[h].out_rel_err - uncapped.quality.heads[h].out_rel_err));
    EXPECT_GT(moved, 1e-3) << (reference ? "reference" : "tensor") << ": the output error ignores the cap";
    EXPECT_TRUE(capped.quality.math == c.math);
  }
}

TEST(LayerViewsMath, AWindowedLayerSaysSoOnBothImplementations) {
  LayerViewsCase c = testing::layer_views_cases()[1];
  c.math.window = 64;
  const auto in = testing::layer_views_inputs(c, 6);
  LayerViewsCase full = c;
  full.math = ViewsMath{};
  const LayerViewsResult full_ref = compute_layer_views(in.q, in.k, in.v, testing::layer_views_setup(full), true);
  for (bool keep_masks : {true, false}) {
    for (bool reference : {true, false}) {
      LayerViewsSetup setup = testing::layer_views_setup(c);
      setup.keep_masks = keep_masks;
      const LayerViewsResult r = compute_layer_views(in.q, in.k, in.v, setup, reference);
      const std::string what = std::string(reference ? "reference" : "tensor") + (keep_masks ? ", masks kept" : "");
      EXPECT_EQ(r.quality.math.window, 64) << what;
      ASSERT_EQ(r.quality.heads.size(), static_cast<size_t>(c.hq)) << what;
      for (const HeadQuality& h : r.quality.heads)
        for (double v : {h.recall, h.random_recall, h.mass, h.random_mass, h.out_rel_err, h.random_out_rel_err})
          EXPECT_TRUE(std::isnan(v)) << what << ": a windowed layer shows a HiP number";
      EXPECT_EQ(r.has_masks, keep_masks) << what;
      if (keep_masks) {  // what HiP would select on full causal attention, marked windowed
        EXPECT_EQ(r.masks.math.window, 64) << what;
        EXPECT_EQ(r.masks.hip.blocks, full_ref.masks.hip.blocks) << what;
        EXPECT_EQ(r.masks.oracle.blocks, full_ref.masks.oracle.blocks) << what;
      }
    }
  }
}

}  // namespace
}  // namespace hipstudio
