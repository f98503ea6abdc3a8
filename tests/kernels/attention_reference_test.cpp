// Sparse and dense attention and the metrics, against plain long-double implementations written
// from paper Algorithm 1's attention step.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "kernels/attention_metrics.h"
#include "kernels/mask_reference.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/sparse_attention_reference.h"
#include "tests/kernels/hip_test_inputs.h"

namespace hipstudio::hip {
namespace {

using testing::OwnedInputs;

int64_t pos_of(const AttentionInputs& in, const HipParams& p, int64_t i) {
  if (!p.causal) return in.tk - 1;
  return in.positions ? in.positions[i] : in.tk - in.tq + i;
}

std::set<int64_t> key_set_of(const AttentionInputs& in, const HipParams& p, const MaskResult& m, int64_t h, int64_t i) {
  const int64_t pos = pos_of(in, p, i);
  const int64_t qb = i / p.b_q;
  std::set<int64_t> keys;
  for (int64_t j = 0; j < std::min(p.sink, pos + 1); ++j) keys.insert(j);
  for (int32_t c = 0; c < m.count(h, qb); ++c) {
    for (int64_t j = m.row(h, qb)[c] * p.b_k; j < (m.row(h, qb)[c] + 1) * p.b_k; ++j) keys.insert(j);
  }
  for (int64_t j = m.dense_from[qb]; j <= pos; ++j) keys.insert(j);
  return keys;
}

// softmax(q.k / sqrt(d)) . V over `keys`, in long double.
std::vector<long double> naive_attend(const AttentionInputs& in, int64_t h, int64_t i, const std::set<int64_t>& keys) {
  const int64_t g = h / (in.hq / in.hkv);
  std::vector<long double> logits;
  long double mx = -INFINITY;
  for (int64_t j : keys) {
    long double s = 0;
    for (int64_t c = 0; c < in.d; ++c) s += (long double)in.q[(h * in.tq + i) * in.d + c] * in.k[(g * in.tk + j) * in.d + c];
    s /= std::sqrt((long double)in.d);
    logits.push_back(s);
    mx = std::max(mx, s);
  }
  long double sum = 0;
  for (auto& l : logits) sum += (l = std::exp(l - mx));
  std::vector<long double> out(static_cast<size_t>(in.d), 0);
  size_t n = 0;
  for (int64_t j : keys) {
    for (int64_t c = 0; c < in.d; ++c) out[c] += logits[n] / sum * in.v[(g * in.tk + j) * in.d + c];
    ++n;
  }
  return out;
}

struct AttnCase {
  OwnedInputs inputs;
  HipParams params;
};

std::vector<AttnCase> setups() {
  std::vector<AttnCase> s;
  HipParams a;
  a.k = 16, a.b_q = 8, a.b_k = 2, a.sink = 4, a.window = 6;
  s.push_back({testing::random_inputs(4, 2, 60, 140, 8, 31), a});
  HipParams b;
  b.k = 8, b.b_q = 4, b.b_k = 1, b.causal = false;
  s.push_back({testing::random_inputs(1, 1, 20, 90, 5, 32), b});
  HipParams c;
  c.k = 12, c.b_q = 3, c.b_k = 3, c.sink = 3;
  OwnedInputs oc = testing::random_inputs(2, 2, 30, 200, 6, 33);
  for (int64_t i = 0; i < oc.tq; ++i) oc.positions.push_back(50 + 4 * i);
  s.push_back({oc, c});
  return s;
}

TEST(AttentionReference, SparseAndDenseMatchPlainSoftmax) {
  for (const AttnCase& s : setups()) {
    const AttentionInputs in = s.inputs.view();
    const MaskResult m = estimate_masks_reference(in, s.params).mask;
    const AttentionOutput sparse = sparse_attention_reference(in, s.params, m);
    const AttentionOutput dense = dense_attention_reference(in, s.params);
    double worst_sparse = 0, worst_dense = 0, sparse_vs_dense = 0;
    for (int64_t h = 0; h < in.hq; ++h) {
      for (int64_t i = 0; i < in.tq; ++i) {
        std::set<int64_t> all;
        for (int64_t j = 0; j <= pos_of(in, s.params, i); ++j) all.insert(j);
        const auto want_sparse = naive_attend(in, h, i, key_set_of(in, s.params, m, h, i));
        const auto want_dense = naive_attend(in, h, i, all);
        for (int64_t c = 0; c < in.d; ++c) {
          const size_t at = static_cast<size_t>((h * in.tq + i) * in.d + c);
          worst_sparse = std::max(worst_sparse, (double)std::abs(sparse.out[at] - want_sparse[c]));
          worst_dense = std::max(worst_dense, (double)std::abs(dense.out[at] - want_dense[c]));
          sparse_vs_dense = std::max(sparse_vs_dense, std::abs(sparse.out[at] - dense.out[at]));
        }
      }
    }
    EXPECT_LE(worst_sparse, 1e-12);
    EXPECT_LE(worst_dense, 1e-12);
    EXPECT_GT(sparse_vs_dense, 1e-6) << "the sparse case must actually drop keys";
  }
}

TEST(AttentionReference, MassMatchesPlainProbabilities) {
  for (const AttnCase& s : setups()) {
    const AttentionInputs in = s.inputs.view();
    const MaskResult hip = estimate_masks_reference(in, s.params).mask;
    const MaskResult rnd = random_masks(in, s.params, 5);
    const std::vector<AttentionMass> mass = attention_mass(in, s.params, {&hip, &rnd});
    ASSERT_EQ(mass.size(), 2u);
    const MaskResult* masks[2] = {&hip, &rnd};
    for (int mi = 0; mi < 2; ++mi) {
      for (int64_t h = 0; h < in.hq; ++h) {
        long double head_total = 0;
        for (int64_t i = 0; i < in.tq; ++i) {
          // Dense probabilities in long double, summed over the used keys.
          const int64_t g = h / (in.hq / in.hkv), e = pos_of(in, s.params, i);
          std::vector<long double> logit(static_cast<size_t>(e + 1));
          long double mx = -INFINITY, sum = 0;
          for (int64_t j = 0; j <= e; ++j) {
            long double x = 0;
            for (int64_t c = 0; c < in.d; ++c) x += (long double)in.q[(h * in.tq + i) * in.d + c] * in.k[(g * in.tk + j) * in.d + c];
            logit[j] = x / std::sqrt((long double)in.d);
            mx = std::max(mx, logit[j]);
          }
          for (auto& l : logit) sum += (l = std::exp(l - mx));
          long double used = 0;
          for (int64_t j : key_set_of(in, s.params, *masks[mi], h, i)) used += logit[j];
          const double want = (double)(used / sum);
          EXPECT_NEAR(mass[mi].per_query[h * in.tq + i], want, 1e-12);
          EXPECT_LE(mass[mi].per_query[h * in.tq + i], 1.0 + 1e-12);
          head_total += want;
        }
        EXPECT_NEAR(mass[mi].per_head[h], (double)(head_total / in.tq), 1e-12);
      }
    }
  }
}

TEST(AttentionReference, FullSelectionHasUnitMass) {
  const OwnedInputs o = testing::random_inputs(2, 1, 24, 24, 4, 40);
  HipParams p;
  p.k = 32, p.b_q = 4, p.b_k = 2;
  const MaskResult m = estimate_masks_reference(o.view(), p).mask;
  const std::vector<AttentionMass> mass = attention_mass(o.view(), p, {&m});
  for (double x : mass[0].per_query) EXPECT_NEAR(x, 1.0, 1e-14);
}

TEST(AttentionReference, OutputRelativeErrorPerHead) {
  AttentionOutput dense, sparse;
  dense.heads = sparse.heads = 2;
  dense.tq = sparse.tq = 1;
  dense.d = sparse.d = 2;
  dense.out = {3, 4, 1, 0};
  sparse.out = {3, 4.5, 1, 0};  // head 0: |(0, 0.5)| / |(3, 4)| = 0.1; head 1: exact
  const std::vector<double> err = output_relative_error(sparse, dense);
  ASSERT_EQ(err.size(), 2u);
  EXPECT_NEAR(err[0], 0.1, 1e-15);
  EXPECT_EQ(err[1], 0.0);
  dense.out = {0, 0, 0, 0};
  EXPECT_TRUE(std::isinf(output_relative_error(sparse, dense)[0]));
  sparse.d = 3;
  EXPECT_THROW(output_relative_error(sparse, dense), std::invalid_argument);
}

TEST(AttentionReference, NeedsVAndAMatchingMask) {
  const OwnedInputs o = testing::random_inputs(1, 1, 8, 8, 4, 41);
  HipParams p;
  p.k = 4, p.b_q = 4, p.b_k = 2;
  const MaskResult m = estimate_masks_reference(o.view(false), p).mask;
  EXPECT_THROW(sparse_attention_reference(o.view(false), p, m), AttentionInputError);
  HipParams other = p;
  other.b_q = 2;  // 4 query blocks instead of 2
  EXPECT_THROW(sparse_attention_reference(o.view(), other, m), std::invalid_argument);
}

TEST(AttentionReference, MeanPerHeadHonoursTheFilter) {
  const std::vector<double> v = {1, 2, 3, 10, 20, 30};  // 2 heads x 3 blocks
  EXPECT_EQ(mean_per_head(v, 2, 3), (std::vector<double>{2, 20}));
  const std::vector<char> only_last = {0, 0, 1};
  EXPECT_EQ(mean_per_head(v, 2, 3, &only_last), (std::vector<double>{3, 30}));
  const std::vector<char> none = {0, 0, 0};
  EXPECT_TRUE(std::isnan(mean_per_head(v, 2, 3, &none)[0]));
}

}  // namespace
}  // namespace hipstudio::hip
