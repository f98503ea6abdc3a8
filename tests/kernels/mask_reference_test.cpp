// The HiP reference against an independent plain implementation of the search's steps, plus the
// structural properties every mask and trace must have.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/mask_reference.h"
#include "kernels/search_range.h"
#include "tests/kernels/hip_test_inputs.h"
#include "tests/kernels/naive_hip.h"

namespace hipstudio::hip {
namespace {

using testing::OwnedInputs;

struct Case {
  std::string name;
  OwnedInputs inputs;
  HipParams params;
};

// Small integers make many exact score ties, which exercises the tie rule (smaller begin first).
OwnedInputs tie_heavy_inputs(int64_t t, int64_t d, uint64_t seed) {
  OwnedInputs o = testing::random_inputs(1, 1, t, t, d, seed);
  testing::TestRng rng(seed + 1);
  for (float& x : o.q) x = static_cast<float>(static_cast<int>(rng.next() % 3) - 1);
  for (float& x : o.k) x = static_cast<float>(static_cast<int>(rng.next() % 3) - 1);
  return o;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  {
    HipParams p;
    p.k = 16, p.b_q = 8, p.b_k = 2;
    c.push_back({"defaults_t200", testing::random_inputs(2, 2, 200, 200, 16, 1), p});
  }
  {
    HipParams p;
    p.k = 24, p.b_q = 4, p.b_k = 4, p.b_sq = 2, p.b_sk = 2, p.sink = 8, p.window = 16, p.rho = 0.3;
    c.push_back({"gqa_strides_sink_window", testing::random_inputs(4, 2, 100, 257, 12, 2), p});
  }
  {
    HipParams p;
    p.k = 10, p.b_q = 16, p.b_k = 1, p.rho = 1.0, p.causal = false;
    c.push_back({"non_causal_last", testing::random_inputs(1, 1, 40, 150, 9, 3), p});
  }
  {
    HipParams p;
    p.k = 12, p.b_q = 5, p.b_k = 2, p.rho = 0.0;
    OwnedInputs o = testing::random_inputs(2, 1, 50, 300, 8, 4);
    for (int64_t i = 0; i < o.tq; ++i) o.positions.push_back(20 + 5 * i + (i % 3));
    c.push_back({"positions_first", o, p});
  }
  {
    HipParams p;
    p.k = 8, p.b_q = 4, p.b_k = 1;
    c.push_back({"ties_center", tie_heavy_inputs(180, 4, 5), p});
  }
  {
    HipParams p;
    p.k = 12, p.b_q = 6, p.b_k = 2, p.b_sq = 3, p.rho = 0.75, p.sink = 4, p.window = 6;
    c.push_back({"ties_fraction", tie_heavy_inputs(230, 3, 6), p});
  }
  return c;
}

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

TEST(MaskReference, MatchesPlainImplementationOfTheIssue) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttentionInputs in = c.inputs.view();
    const MaskResult m = estimate_masks_reference(in, c.params).mask;
    int64_t searched = 0;
    for (int64_t h = 0; h < in.hq; ++h) {
      for (int64_t qb = 0; qb < m.query_blocks; ++qb) {
        const testing::NaiveResult want = testing::naive_hip_mask(in, c.params, h, qb);
        const std::vector<int32_t> got(m.row(h, qb), m.row(h, qb) + m.count(h, qb));
        ASSERT_EQ(got, want.blocks) << "head " << h << " block " << qb;
        EXPECT_EQ(m.dense_from[qb], want.dense_from);
        EXPECT_EQ(m.iterations[m.index(h, qb)], want.iterations);
        EXPECT_EQ(m.branches[m.index(h, qb)], want.branches);
        searched += want.iterations > 0;
      }
    }
    EXPECT_GT(searched, 0) << "the case never searches: it tests nothing";
  }
}

TEST(MaskReference, MasksAreSortedUniqueInRangeAndFull) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttentionInputs in = c.inputs.view();
    const MaskResult m = estimate_masks_reference(in, c.params).mask;
    ASSERT_EQ(m.kb, c.params.k / c.params.b_k);
    ASSERT_EQ(m.query_blocks, (in.tq + c.params.b_q - 1) / c.params.b_q);
    for (int64_t h = 0; h < m.heads; ++h) {
      for (int64_t qb = 0; qb < m.query_blocks; ++qb) {
        const SearchRange sr = search_range(in, c.params, qb);
        const int32_t* row = m.row(h, qb);
        const int32_t n = m.count(h, qb);
        EXPECT_EQ(n, std::min<int64_t>(sr.blocks(), m.kb));
        for (int32_t j = 0; j < n; ++j) {
          EXPECT_GE(row[j], sr.lo);
          EXPECT_LT(row[j], sr.hi);
          if (j > 0) {
            EXPECT_LT(row[j - 1], row[j]);  // ascending and unique
          }
        }
        for (int64_t j = n; j < m.kb; ++j) EXPECT_EQ(row[j], -1);
      }
    }
  }
}

// Replays one trace step by step: the branches are the split of the current nodes, the kept ones
// are the best Kb by (score desc, begin asc), scores are the reference's definition, and the last
// nodes are the mask.
void check_trace(const AttentionInputs& in, const HipParams& p, const MaskTrace& t, const MaskResult& m) {
  const int64_t kb = p.k / p.b_k;
  const SearchRange sr = search_range(in, p, t.query_block);
  EXPECT_EQ(t.lo, sr.lo);
  EXPECT_EQ(t.hi, sr.hi);
  EXPECT_EQ(t.dense_from, sr.dense_from);
  const std::vector<int32_t> mask_row(m.row(t.head, t.query_block), m.row(t.head, t.query_block) + m.count(t.head, t.query_block));
  EXPECT_EQ(t.blocks, mask_row);
  if (sr.blocks() <= kb) {
    EXPECT_TRUE(t.iterations.empty());
    EXPECT_TRUE(t.initial_begin.empty());
    return;
  }
  ASSERT_EQ(static_cast<int64_t>(t.initial_begin.size()), kb);
  std::vector<std::pair<int32_t, int32_t>> nodes;
  int64_t largest = 0;
  for (int64_t j = 0; j < kb; ++j) {
    EXPECT_EQ(t.initial_begin[j], j == 0 ? sr.lo : t.initial_end[j - 1]);  // contiguous cover
    nodes.push_back({t.initial_begin[j], t.initial_end[j]});
    largest = std::max<int64_t>(largest, t.initial_end[j] - t.initial_begin[j]);
  }
  EXPECT_EQ(t.initial_end.back(), sr.hi);
  int64_t branch_total = 0;
  for (const TraceIteration& it : t.iterations) {
    std::vector<std::pair<int32_t, int32_t>> expect;
    for (auto [a, b] : nodes) {
      if (b - a >= 2) {
        expect.push_back({a, a + (b - a) / 2});
        expect.push_back({a + (b - a) / 2, b});
      } else {
        expect.push_back({a, b});
      }
    }
    ASSERT_EQ(it.branches.size(), expect.size());
    branch_total += static_cast<int64_t>(it.branches.size());
    std::vector<std::pair<int32_t, int32_t>> next;
    for (size_t i = 0; i < expect.size(); ++i) {
      const TraceBranch& br = it.branches[i];
      EXPECT_EQ(br.begin, expect[i].first);
      EXPECT_EQ(br.end, expect[i].second);
      const int64_t len = br.end - br.begin;
      EXPECT_EQ(br.repr, br.begin + std::min<int64_t>(len - 1, static_cast<int64_t>(std::floor(p.rho * len))));
      EXPECT_TRUE(same_bits(br.score, testing::naive_score(in, p, t.head, t.query_block, br.repr)));
      if (br.kept) next.push_back({br.begin, br.end});
    }
    ASSERT_EQ(static_cast<int64_t>(next.size()), kb);
    for (const TraceBranch& k : it.branches) {
      if (!k.kept) continue;
      for (const TraceBranch& d : it.branches) {
        if (d.kept) continue;
        EXPECT_TRUE(k.score > d.score || (k.score == d.score && k.begin < d.begin))
            << "kept [" << k.begin << "," << k.end << ") over dropped [" << d.begin << "," << d.end << ")";
      }
    }
    nodes = next;
  }
  std::vector<int32_t> final_starts;
  for (auto [a, b] : nodes) {
    EXPECT_EQ(b - a, 1);
    final_starts.push_back(a);
  }
  EXPECT_EQ(final_starts, mask_row);
  EXPECT_EQ(branch_total, m.branches[m.index(t.head, t.query_block)]);
  EXPECT_EQ(static_cast<int64_t>(t.iterations.size()), m.iterations[m.index(t.head, t.query_block)]);
  EXPECT_LE(static_cast<double>(t.iterations.size()), std::ceil(std::log2(static_cast<double>(largest))));
}

TEST(MaskReference, TracesReplayToTheMask) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttentionInputs in = c.inputs.view();
    const int64_t qbs = query_blocks(in, c.params);
    MaskOptions opt;
    for (int64_t h = 0; h < in.hq; ++h) {
      for (int64_t qb = 0; qb < qbs; ++qb) opt.trace.push_back({h, qb});
    }
    const MaskEstimate est = estimate_masks_reference(in, c.params, opt);
    ASSERT_EQ(est.traces.size(), opt.trace.size());
    for (size_t i = 0; i < est.traces.size(); ++i) {
      EXPECT_EQ(est.traces[i].head, opt.trace[i].head);
      EXPECT_EQ(est.traces[i].query_block, opt.trace[i].query_block);
      check_trace(in, c.params, est.traces[i], est.mask);
    }
  }
}

TEST(MaskReference, TracingOneBlockMatchesTheFullRun) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttentionInputs in = c.inputs.view();
    const int64_t last = query_blocks(in, c.params) - 1;
    MaskOptions opt;
    opt.trace = {{in.hq - 1, last}, {0, last / 2}, {in.hq - 1, last}};  // a duplicate too
    const MaskEstimate est = estimate_masks_reference(in, c.params, opt);
    const MaskResult plain = estimate_masks_reference(in, c.params).mask;
    EXPECT_EQ(est.mask.blocks, plain.blocks);  // tracing never changes the result
    for (size_t i = 0; i < opt.trace.size(); ++i) {
      const MaskTrace single = trace_block_mask(in, c.params, opt.trace[i].head, opt.trace[i].query_block);
      EXPECT_EQ(single.blocks, est.traces[i].blocks);
      ASSERT_EQ(single.iterations.size(), est.traces[i].iterations.size());
      for (size_t it = 0; it < single.iterations.size(); ++it) {
        ASSERT_EQ(single.iterations[it].branches.size(), est.traces[i].iterations[it].branches.size());
        for (size_t b = 0; b < single.iterations[it].branches.size(); ++b) {
          const TraceBranch& x = single.iterations[it].branches[b];
          const TraceBranch& y = est.traces[i].iterations[it].branches[b];
          EXPECT_TRUE(x.begin == y.begin && x.end == y.end && x.repr == y.repr && x.kept == y.kept &&
                      same_bits(x.score, y.score));
        }
      }
      check_trace(in, c.params, single, plain);
    }
  }
}

TEST(MaskReference, ResultDoesNotDependOnThreadCount) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    MaskOptions one, two, many;
    one.threads = 1, two.threads = 2, many.threads = 7;
    const MaskResult a = estimate_masks_reference(c.inputs.view(), c.params, one).mask;
    const MaskResult b = estimate_masks_reference(c.inputs.view(), c.params, two).mask;
    const MaskResult d = estimate_masks_reference(c.inputs.view(), c.params, many).mask;
    EXPECT_EQ(a.blocks, b.blocks);
    EXPECT_EQ(a.blocks, d.blocks);
    EXPECT_EQ(a.branches, d.branches);
    EXPECT_EQ(a.counts, d.counts);
  }
}

TEST(MaskReference, RejectsBadInputsAndRequests) {
  OwnedInputs o = testing::random_inputs(2, 1, 10, 8, 4, 9);  // more queries than keys
  HipParams p;
  p.k = 4, p.b_q = 2, p.b_k = 2;
  EXPECT_THROW(estimate_masks_reference(o.view(), p), AttentionInputError);
  o = testing::random_inputs(3, 2, 8, 8, 4, 9);  // 3 heads over 2 KV heads
  EXPECT_THROW(estimate_masks_reference(o.view(), p), AttentionInputError);
  o = testing::random_inputs(2, 1, 8, 8, 4, 9);
  o.positions.assign(8, 3);
  o.positions[5] = 8;  // outside [0, tk)
  EXPECT_THROW(estimate_masks_reference(o.view(), p), AttentionInputError);
  o.positions.clear();
  MaskOptions opt;
  opt.trace = {{2, 0}};  // head 2 of 2
  EXPECT_THROW(estimate_masks_reference(o.view(), p, opt), AttentionInputError);
  EXPECT_THROW(trace_block_mask(o.view(), p, 0, 4), AttentionInputError);  // 4 query blocks: 0..3
  p.k = 3;
  EXPECT_THROW(estimate_masks_reference(o.view(), p), HipParamError);
}

}  // namespace
}  // namespace hipstudio::hip
