// The logic behind `hipstudio mask`: what it computes for a capture, without files.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/mask_report.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "tests/kernels/hip_test_inputs.h"

namespace hipstudio::hip {
namespace {

TEST(MaskReport, ComparesHipWithOracleAndRandom) {
  const testing::OwnedInputs o = testing::random_inputs(4, 2, 96, 256, 8, 80);
  HipParams p;
  p.k = 16, p.b_q = 16, p.b_k = 2, p.sink = 4, p.window = 8;
  MaskReportOptions opt;
  opt.random_seed = 3;
  const MaskReport r = build_mask_report(o.view(), p, opt);
  // Query blocks start at positions 160, 176, ..., 240: all have N = (p0+1-8)/2 - 2 > Kb = 8.
  EXPECT_EQ(r.searched_query_blocks, 6);
  EXPECT_EQ(r.hip.mask.blocks, estimate_masks_reference(o.view(), p).mask.blocks);
  EXPECT_EQ(r.random.mask.blocks, random_masks(o.view(), p, 3).blocks);
  for (int64_t h = 0; h < 4; ++h) {
    EXPECT_EQ(r.oracle.recall_per_head[h], 1.0);
    EXPECT_GE(r.hip.recall_per_head[h], 0.0);
    EXPECT_LE(r.hip.recall_per_head[h], 1.0);
    EXPECT_EQ(r.hip.recall_searched_per_head[h], r.hip.recall_per_head[h]);  // every block searched
    for (const SelectionReport* s : {&r.hip, &r.oracle, &r.random}) {
      EXPECT_GT(s->mass.per_head[h], 0.0);
      EXPECT_LE(s->mass.per_head[h], 1.0 + 1e-12);
      ASSERT_EQ(s->output_error.size(), 4u);
      EXPECT_GT(s->output_error[h], 0.0);  // keys were dropped
    }
  }
  EXPECT_EQ(r.dense.out.size(), static_cast<size_t>(4 * 96 * 8));
}

TEST(MaskReport, FullBudgetIsExactAndVIsOptional) {
  const testing::OwnedInputs o = testing::random_inputs(2, 1, 20, 20, 4, 81);
  HipParams p;
  p.k = 32, p.b_q = 4, p.b_k = 2;
  const MaskReport r = build_mask_report(o.view(), p);
  EXPECT_EQ(r.searched_query_blocks, 0);
  for (const SelectionReport* s : {&r.hip, &r.oracle, &r.random}) {
    for (double e : s->output_error) EXPECT_LE(e, 1e-12);
    for (double m : s->mass.per_head) EXPECT_NEAR(m, 1.0, 1e-12);
    for (double x : s->recall_per_head) EXPECT_EQ(x, 1.0);
    for (double x : s->recall_searched_per_head) EXPECT_TRUE(std::isnan(x));  // no searched block
  }
  const MaskReport no_v = build_mask_report(o.view(false), p);
  EXPECT_TRUE(no_v.dense.out.empty());
  EXPECT_TRUE(no_v.hip.output_error.empty());
  EXPECT_EQ(no_v.hip.mask.blocks, r.hip.mask.blocks);
}

}  // namespace
}  // namespace hipstudio::hip
