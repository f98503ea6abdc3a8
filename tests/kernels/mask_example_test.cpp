// Hand-computed searches (worked out on paper from the search's rules) and the full-budget case.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/mask_reference.h"
#include "kernels/oracle.h"
#include "kernels/sparse_attention_reference.h"
#include "tests/kernels/hip_test_inputs.h"

namespace hipstudio::hip {
namespace {

using testing::OwnedInputs;

// One query at position 15, d = 1, q = 1: the score of key j is s[j]. b_q = b_k = 1, k = 2.
OwnedInputs sixteen_keys() {
  const std::vector<float> s = {0, 0, 3, 0, 0, 9, 5, 0, 0, 0, 4, 0, 0, 0, 1, 0};
  OwnedInputs o;
  o.hq = o.hkv = 1;
  o.tq = 1;
  o.tk = 16;
  o.d = 1;
  o.q = {1.0f};
  o.k = s;
  o.v = s;
  return o;
}

HipParams two_of_sixteen(double rho) {
  HipParams p;
  p.k = 2, p.b_q = 1, p.b_k = 1, p.rho = rho;
  return p;
}

struct Expected {
  int32_t begin, end, repr;
  double score;
  bool kept;
};

void expect_iteration(const TraceIteration& it, const std::vector<Expected>& want) {
  ASSERT_EQ(it.branches.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TraceBranch& b = it.branches[i];
    EXPECT_EQ(b.begin, want[i].begin) << i;
    EXPECT_EQ(b.end, want[i].end) << i;
    EXPECT_EQ(b.repr, want[i].repr) << i;
    EXPECT_EQ(b.score, want[i].score) << i;
    EXPECT_EQ(b.kept, want[i].kept) << i;
  }
}

TEST(MaskExample, CenterRepresentativeByHand) {
  // Nodes [0,8) [8,16). It 1: centers 2, 6, 10, 14 score 3, 5, 4, 1 -> keep [4,8) [8,12).
  // It 2: [4,6)->5 (9), [6,8)->7 (0), [8,10)->9 (0), [10,12)->11 (0): keep 9 and the first tie [6,8).
  // It 3: blocks 4, 5, 6, 7 score 0, 9, 5, 0 -> keep 5 and 6.
  const OwnedInputs o = sixteen_keys();
  const MaskTrace t = trace_block_mask(o.view(), two_of_sixteen(0.5), 0, 0);
  EXPECT_EQ(t.lo, 0);
  EXPECT_EQ(t.hi, 16);
  EXPECT_EQ(t.dense_from, 16);
  EXPECT_EQ(t.initial_begin, (std::vector<int32_t>{0, 8}));
  EXPECT_EQ(t.initial_end, (std::vector<int32_t>{8, 16}));
  ASSERT_EQ(t.iterations.size(), 3u);
  expect_iteration(t.iterations[0], {{0, 4, 2, 3, false}, {4, 8, 6, 5, true}, {8, 12, 10, 4, true}, {12, 16, 14, 1, false}});
  expect_iteration(t.iterations[1], {{4, 6, 5, 9, true}, {6, 8, 7, 0, true}, {8, 10, 9, 0, false}, {10, 12, 11, 0, false}});
  expect_iteration(t.iterations[2], {{4, 5, 4, 0, false}, {5, 6, 5, 9, true}, {6, 7, 6, 5, true}, {7, 8, 7, 0, false}});
  EXPECT_EQ(t.blocks, (std::vector<int32_t>{5, 6}));
  const MaskResult m = estimate_masks_reference(o.view(), two_of_sixteen(0.5)).mask;
  EXPECT_EQ(m.branches[0], 12);
  EXPECT_EQ(m.iterations[0], 3);
}

TEST(MaskExample, FirstRepresentativeByHand) {
  // It 1: firsts 0, 4, 8, 12 all score 0 -> ties keep [0,4) [4,8).
  // It 2: [0,2)->0 (0), [2,4)->2 (3), [4,6)->4 (0), [6,8)->6 (5): keep [2,4) [6,8).
  // It 3: blocks 2, 3, 6, 7 score 3, 0, 5, 0 -> keep 2 and 6. The oracle keeps 5 and 6: recall 0.5.
  const OwnedInputs o = sixteen_keys();
  const MaskTrace t = trace_block_mask(o.view(), two_of_sixteen(0.0), 0, 0);
  ASSERT_EQ(t.iterations.size(), 3u);
  expect_iteration(t.iterations[0], {{0, 4, 0, 0, true}, {4, 8, 4, 0, true}, {8, 12, 8, 0, false}, {12, 16, 12, 0, false}});
  expect_iteration(t.iterations[1], {{0, 2, 0, 0, false}, {2, 4, 2, 3, true}, {4, 6, 4, 0, false}, {6, 8, 6, 5, true}});
  EXPECT_EQ(t.blocks, (std::vector<int32_t>{2, 6}));
  const MaskResult hip = estimate_masks_reference(o.view(), two_of_sixteen(0.0)).mask;
  const MaskResult oracle = oracle_masks(o.view(), two_of_sixteen(0.0));
  EXPECT_EQ(std::vector<int32_t>(oracle.row(0, 0), oracle.row(0, 0) + 2), (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(mask_recall(hip, oracle), std::vector<double>{0.5});
}

TEST(MaskExample, SinkAndWindowShapeTheRange) {
  // 40 keys, one query at 39, b_k = 4, sink 8, window 12: lo = 2, hi = floor((40 - 12) / 4) = 7.
  OwnedInputs o = testing::random_inputs(1, 1, 1, 40, 4, 21);
  HipParams p;
  p.k = 8, p.b_q = 1, p.b_k = 4, p.sink = 8, p.window = 12;
  const MaskTrace t = trace_block_mask(o.view(), p, 0, 0);
  EXPECT_EQ(t.lo, 2);
  EXPECT_EQ(t.hi, 7);
  EXPECT_EQ(t.dense_from, 28);
  EXPECT_EQ(t.blocks.size(), 2u);
  // Node sizes: N = 5 over Kb = 2 -> [2,4) [4,7); the largest (3) needs ceil(log2 3) = 2 iterations
  // at most.
  EXPECT_EQ(t.initial_begin, (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(t.initial_end, (std::vector<int32_t>{4, 7}));
  EXPECT_LE(t.iterations.size(), 2u);
}

TEST(MaskExample, FullBudgetSelectsEverythingAndSparseEqualsDense) {
  // k >= T: N <= Kb for every block, so HiP takes the whole causal range and sparse attention must
  // reproduce dense attention.
  struct Setting {
    int64_t t, b_q, b_k, k, sink, window;
  };
  for (const Setting& s : {Setting{64, 8, 2, 64, 0, 0}, Setting{70, 4, 2, 128, 4, 8}, Setting{33, 32, 1, 40, 2, 3}}) {
    SCOPED_TRACE(s.t);
    const OwnedInputs o = testing::random_inputs(2, 1, s.t, s.t, 8, 100 + s.t);
    HipParams p;
    p.k = s.k, p.b_q = s.b_q, p.b_k = s.b_k, p.sink = s.sink, p.window = s.window;
    const MaskResult m = estimate_masks_reference(o.view(), p).mask;
    for (int64_t h = 0; h < m.heads; ++h) {
      for (int64_t qb = 0; qb < m.query_blocks; ++qb) {
        EXPECT_EQ(m.iterations[m.index(h, qb)], 0);
        const int64_t p0 = qb * s.b_q;  // tq == tk: query i sits at position i
        const int64_t lo = s.sink / s.b_k;
        const int64_t hi = std::max<int64_t>(lo, static_cast<int64_t>(std::floor((p0 + 1.0 - s.window) / s.b_k)));
        std::vector<int32_t> want;
        for (int64_t j = lo; j < hi; ++j) want.push_back(static_cast<int32_t>(j));
        EXPECT_EQ(std::vector<int32_t>(m.row(h, qb), m.row(h, qb) + m.count(h, qb)), want);
      }
    }
    const AttentionOutput sparse = sparse_attention_reference(o.view(), p, m);
    const AttentionOutput dense = dense_attention_reference(o.view(), p);
    double worst = 0;
    for (size_t i = 0; i < dense.out.size(); ++i) worst = std::max(worst, std::abs(sparse.out[i] - dense.out[i]));
    EXPECT_LE(worst, 1e-10);
  }
}

}  // namespace
}  // namespace hipstudio::hip
