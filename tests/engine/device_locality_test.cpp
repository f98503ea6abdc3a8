// Score locality from tensors (engine/analysis/device_locality.h, the GUI's device path, here run by
// LibTorch on the CPU) against the float64 reference (kernels/score_locality.h) on the same layer:
// the same pairs, range and histogram, the same moments up to summation order, the same KL.
#include <cmath>
#include <cstdio>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/analysis/device_locality.h"
#include "engine/analysis/host_inputs.h"

namespace hipstudio {
namespace {

TEST(DeviceLocality, TensorStatisticsEqualTheReference) {
  at::Generator gen = at::detail::createCPUGenerator(5);
  const int64_t heads = 4, kv_heads = 2, tokens = 300, dim = 16;
  const at::Tensor q = at::randn({heads, tokens, dim}, gen, at::kFloat);
  const at::Tensor k = (at::randn({kv_heads, tokens, dim}, gen, at::kFloat) * 0.2).cumsum(1) +
                       at::randn({kv_heads, tokens, dim}, gen, at::kFloat) * 0.5;
  const HostAttentionInputs host(q, k, k);
  hip::HipParams p;
  p.causal = true;
  hip::LocalityParams lp;
  lp.bins = 17;
  lp.deltas = {7, 1, 2, 40, 299, 300, 5000};  // the last two have no pairs
  const std::vector<int64_t> queries = {150, 151, 200, 299, 0, 3};
  double worst = 0;
  for (int64_t head : {int64_t{0}, int64_t{3}}) {
    const hip::ScoreLocality got = score_locality_of_tensors(q, k, head, queries, lp);
    const hip::ScoreLocality ref = hip::score_locality(host.view, p, head, queries, lp);
    ASSERT_EQ(got.deltas.size(), ref.deltas.size());
    EXPECT_EQ(got.queries, ref.queries);
    for (size_t i = 0; i < ref.deltas.size(); ++i) {
      const hip::DeltaStats &a = got.deltas[i], &b = ref.deltas[i];
      EXPECT_EQ(a.delta, b.delta);
      EXPECT_EQ(a.pairs, b.pairs) << "Delta " << b.delta;
      if (b.pairs == 0) {
        EXPECT_TRUE(std::isnan(a.mean) && std::isnan(a.kl_to_normal)) << "Delta " << b.delta;
        continue;
      }
      // Scores come from a matmul here and from dot_f64 there: equal up to summation order.
      EXPECT_NEAR(a.hist_lo, b.hist_lo, 1e-12) << "Delta " << b.delta;
      EXPECT_NEAR(a.hist_hi, b.hist_hi, 1e-12) << "Delta " << b.delta;
      EXPECT_EQ(a.counts, b.counts) << "head " << head << " Delta " << b.delta;
      worst = std::max({worst, std::abs(a.mean - b.mean), std::abs(a.stddev - b.stddev),
                        std::abs(a.kl_to_normal - b.kl_to_normal)});
    }
  }
  std::printf("locality from tensors vs the float64 reference: max mean/std/KL diff %.3g\n", worst);
  EXPECT_LE(worst, 1e-10);
}

TEST(DeviceLocality, BadInputIsRefusedAsTheReferenceRefusesIt) {
  const at::Tensor q = at::zeros({2, 10, 4}), k = at::zeros({1, 10, 4});
  hip::LocalityParams lp;
  lp.deltas = {1};
  EXPECT_THROW(score_locality_of_tensors(q, k, 2, {5}, lp), hip::AttentionInputError);
  EXPECT_THROW(score_locality_of_tensors(q, k, 0, {10}, lp), hip::AttentionInputError);
  lp.deltas = {0};
  EXPECT_THROW(score_locality_of_tensors(q, k, 0, {5}, lp), hip::HipParamError);
}

}  // namespace
}  // namespace hipstudio
