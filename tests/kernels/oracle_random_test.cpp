// The exact oracle against a brute-force top-k, and the random baseline's distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/mask_reference.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/search_range.h"
#include "tests/kernels/hip_test_inputs.h"
#include "tests/kernels/naive_hip.h"

namespace hipstudio::hip {
namespace {

using testing::OwnedInputs;

TEST(Oracle, MatchesBruteForceTopBlocks) {
  OwnedInputs ties = testing::random_inputs(2, 1, 40, 160, 3, 51);
  testing::TestRng rng(52);
  for (float& x : ties.k) x = static_cast<float>(static_cast<int>(rng.next() % 3) - 1);  // many tied blocks
  struct C {
    OwnedInputs in;
    HipParams p;
  };
  HipParams a;
  a.k = 16, a.b_q = 8, a.b_k = 2, a.b_sq = 2, a.b_sk = 2, a.sink = 2, a.window = 4;
  HipParams b;
  b.k = 9, b.b_q = 5, b.b_k = 3, b.b_sk = 3;
  for (const C& c : {C{testing::random_inputs(2, 2, 50, 130, 7, 50), a}, C{ties, b}}) {
    const AttentionInputs in = c.in.view();
    const MaskResult oracle = oracle_masks(in, c.p);
    for (int64_t h = 0; h < in.hq; ++h) {
      for (int64_t qb = 0; qb < oracle.query_blocks; ++qb) {
        const SearchRange sr = search_range(in, c.p, qb);
        // Brute force: every key of every block (b_sk is ignored by the oracle), sampled rows.
        const int64_t g = h / (in.hq / in.hkv);
        std::vector<std::pair<double, int32_t>> scored;
        for (int64_t j = sr.lo; j < sr.hi; ++j) {
          double best = -INFINITY;
          for (int64_t i = sr.row_begin; i < sr.row_end; i += c.p.b_sq) {
            for (int64_t key = j * c.p.b_k; key < (j + 1) * c.p.b_k; ++key) {
              best = std::max(best, testing::naive_dot(in.q + (h * in.tq + i) * in.d, in.k + (g * in.tk + key) * in.d, in.d));
            }
          }
          scored.push_back({-best, static_cast<int32_t>(j)});  // sort ascending: best first, then smaller j
        }
        if (h == 0) {
          const std::vector<double> s = oracle_block_scores(in, c.p, h, qb);
          ASSERT_EQ(s.size(), scored.size());
          for (size_t j = 0; j < s.size(); ++j) EXPECT_EQ(s[j], -scored[j].first);
        }
        std::sort(scored.begin(), scored.end());
        std::vector<int32_t> want;
        for (size_t j = 0; j < scored.size() && static_cast<int64_t>(j) < oracle.kb; ++j) want.push_back(scored[j].second);
        std::sort(want.begin(), want.end());
        EXPECT_EQ(std::vector<int32_t>(oracle.row(h, qb), oracle.row(h, qb) + oracle.count(h, qb)), want);
      }
    }
    for (double r : mask_recall(oracle, oracle)) EXPECT_EQ(r, 1.0);
  }
}

TEST(Oracle, RecallCountsTheIntersection) {
  MaskResult a, b;
  a.heads = b.heads = 1;
  a.query_blocks = b.query_blocks = 2;
  a.kb = b.kb = 3;
  a.blocks = {1, 4, 7, 2, -1, -1};
  a.counts = {3, 1};
  b.blocks = {4, 5, 7, 0, 0, 0};
  b.counts = {3, 0};
  EXPECT_EQ(mask_recall(a, b), (std::vector<double>{2.0 / 3.0, 1.0}));  // empty reference: 1
  b.kb = 4;
  EXPECT_THROW(mask_recall(a, b), std::invalid_argument);
}

TEST(RandomBaseline, ValidDeterministicAndSeeded) {
  const OwnedInputs o = testing::random_inputs(3, 1, 64, 300, 4, 60);
  HipParams p;
  p.k = 20, p.b_q = 16, p.b_k = 2, p.sink = 4, p.window = 8;
  const MaskResult a = random_masks(o.view(), p, 1), again = random_masks(o.view(), p, 1), other = random_masks(o.view(), p, 2);
  EXPECT_EQ(a.blocks, again.blocks);
  EXPECT_NE(a.blocks, other.blocks);
  for (int64_t h = 0; h < a.heads; ++h) {
    for (int64_t qb = 0; qb < a.query_blocks; ++qb) {
      const SearchRange sr = search_range(o.view(), p, qb);
      ASSERT_EQ(a.count(h, qb), std::min<int64_t>(sr.blocks(), a.kb));
      for (int32_t j = 0; j < a.count(h, qb); ++j) {
        EXPECT_GE(a.row(h, qb)[j], sr.lo);
        EXPECT_LT(a.row(h, qb)[j], sr.hi);
        if (j > 0) {
          EXPECT_LT(a.row(h, qb)[j - 1], a.row(h, qb)[j]);
        }
      }
    }
  }
}

TEST(RandomBaseline, RecallAveragesKbOverNAndBlocksAreUniform) {
  // 64 heads, one query at position 511, b_k = 1, k = 64: N = 512, Kb = 64, E[recall] = 1/8.
  const OwnedInputs o = testing::random_inputs(64, 64, 1, 512, 4, 61);
  HipParams p;
  p.k = 64, p.b_q = 1, p.b_k = 1;
  const MaskResult oracle = oracle_masks(o.view(), p);
  double total = 0;
  int samples = 0;
  std::vector<int> hits(512, 0);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const MaskResult r = random_masks(o.view(), p, seed);
    for (double x : mask_recall(r, oracle)) total += x, ++samples;
    for (int32_t b : r.blocks) hits[b] += 1;
  }
  EXPECT_NEAR(total / samples, 64.0 / 512.0, 0.01);  // about 6 standard errors
  // Each block is picked with probability 1/8 in 640 draws: mean 80, sd 8.4.
  EXPECT_GE(*std::min_element(hits.begin(), hits.end()), 40);
  EXPECT_LE(*std::max_element(hits.begin(), hits.end()), 120);
}

}  // namespace
}  // namespace hipstudio::hip
