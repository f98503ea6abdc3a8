#pragma once
// Brute-force versions of the selection methods' rules (docs/METHODS.md), written apart from
// kernels/methods/: plain loops over tokens, std::exp and running sums, sort-based top-k. The
// references must give the same masks (their scores differ from these in the last bits at most,
// far below any gap random inputs leave between two candidates).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"

namespace hipstudio::hip::testing {

struct BruteRange {
  int64_t rows_begin, rows_end, lo, hi, dense_from;
};

inline int64_t brute_visible_end(const AttentionInputs& in, const HipParams& p, int64_t i) {
  if (!p.causal) return in.tk - 1;
  return in.positions ? in.positions[i] : in.tk - in.tq + i;
}

inline BruteRange brute_range(const AttentionInputs& in, const HipParams& p, int64_t b, int64_t qb) {
  BruteRange r;
  r.rows_begin = qb * p.b_q;
  r.rows_end = std::min(in.tq, (qb + 1) * p.b_q);
  const int64_t p0 = brute_visible_end(in, p, r.rows_begin);
  r.lo = p.sink / b;
  r.hi = std::max(r.lo, static_cast<int64_t>(std::floor(static_cast<double>(p0 + 1 - p.window) / b)));
  r.dense_from = r.hi * b;
  return r;
}

// Indices of the m largest scores (ties: lower index), ascending.
inline std::vector<int64_t> brute_top(const std::vector<double>& score, int64_t m) {
  std::vector<int64_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  idx.resize(std::min<size_t>(idx.size(), static_cast<size_t>(std::max<int64_t>(m, 0))));
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Method blocks of size b as the b_k blocks they cover, without those inside the sink.
inline std::vector<int32_t> brute_expand(const std::vector<int64_t>& blocks, int64_t b, const HipParams& p) {
  std::vector<int32_t> out;
  for (int64_t j : blocks)
    for (int64_t key = j * b; key < (j + 1) * b; key += p.b_k)
      if (key >= p.sink) out.push_back(static_cast<int32_t>(key / p.b_k));
  std::sort(out.begin(), out.end());
  return out;
}

inline double brute_dot(const float* a, const float* b, int64_t d) {
  double s = 0;
  for (int64_t e = 0; e < d; ++e) s += static_cast<double>(a[e]) * b[e];
  return s;
}

// (head, query block) -> selected b_k blocks, ascending.
using BruteMask = std::vector<std::vector<std::vector<int32_t>>>;

inline BruteMask brute_streaming(const AttentionInputs& in, const HipParams& p) {
  const int64_t qbs = (in.tq + p.b_q - 1) / p.b_q, kb = p.k / p.b_k;
  BruteMask m(in.hq, std::vector<std::vector<int32_t>>(qbs));
  for (int64_t h = 0; h < in.hq; ++h)
    for (int64_t qb = 0; qb < qbs; ++qb) {
      const BruteRange r = brute_range(in, p, p.b_k, qb);
      std::vector<int64_t> blocks;
      for (int64_t j = std::max(r.lo, r.hi - kb); j < r.hi; ++j) blocks.push_back(j);
      m[h][qb] = brute_expand(blocks, p.b_k, p);
    }
  return m;
}

inline BruteMask brute_quest(const AttentionInputs& in, const HipParams& p, int64_t page) {
  const int64_t qbs = (in.tq + p.b_q - 1) / p.b_q, budget = p.k / page, group = in.hq / in.hkv;
  BruteMask m(in.hq, std::vector<std::vector<int32_t>>(qbs));
  for (int64_t h = 0; h < in.hq; ++h) {
    const float* kh = in.k + (h / group) * in.tk * in.d;
    for (int64_t qb = 0; qb < qbs; ++qb) {
      const BruteRange r = brute_range(in, p, page, qb);
      std::vector<double> score;
      for (int64_t j = r.lo; j < r.hi; ++j) {
        double best = -INFINITY;
        for (int64_t i = r.rows_begin; i < r.rows_end; i += p.b_sq) {
          const float* q = in.q + (h * in.tq + i) * in.d;
          double bound = 0;
          for (int64_t e = 0; e < in.d; ++e) {
            float mn = kh[j * page * in.d + e], mx = mn;
            for (int64_t key = j * page; key < (j + 1) * page; ++key)
              mn = std::min(mn, kh[key * in.d + e]), mx = std::max(mx, kh[key * in.d + e]);
            bound += std::max(static_cast<double>(q[e]) * mn, static_cast<double>(q[e]) * mx);
          }
          best = std::max(best, bound);
        }
        score.push_back(best);
      }
      std::vector<int64_t> pages = brute_top(score, budget);
      for (int64_t& j : pages) j += r.lo;
      m[h][qb] = brute_expand(pages, page, p);
    }
  }
  return m;
}

struct BruteVslash {
  std::vector<std::vector<int64_t>> vertical, slash;  // (hq) ascending
};

inline BruteVslash brute_vslash_state(const AttentionInputs& in, const HipParams& p, double share) {
  const int64_t rows = std::min<int64_t>(64, in.tq), group = in.hq / in.hkv;
  int64_t top = 0;
  for (int64_t r = in.tq - rows; r < in.tq; ++r) top = std::max(top, brute_visible_end(in, p, r));
  const int64_t nv = std::min<int64_t>(std::llround(share * p.k), top + 1);
  const int64_t ns = std::min<int64_t>(p.k - nv, top + 1);
  BruteVslash st;
  for (int64_t h = 0; h < in.hq; ++h) {
    const float* kh = in.k + (h / group) * in.tk * in.d;
    std::vector<double> v(top + 1, 0.0), s(top + 1, 0.0);
    for (int64_t r = in.tq - rows; r < in.tq; ++r) {
      const int64_t e = brute_visible_end(in, p, r);
      std::vector<double> a(e + 1);
      for (int64_t j = 0; j <= e; ++j) a[j] = brute_dot(in.q + (h * in.tq + r) * in.d, kh + j * in.d, in.d) / std::sqrt(double(in.d));
      const double mx = *std::max_element(a.begin(), a.end());
      double sum = 0;
      for (double& x : a) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j <= e; ++j) v[j] += a[j] / sum, s[e - j] += a[j] / sum;
    }
    st.vertical.push_back(brute_top(v, nv));
    st.slash.push_back(brute_top(s, ns));
  }
  return st;
}

inline BruteMask brute_vslash_masks(const AttentionInputs& in, const HipParams& p, const BruteVslash& st) {
  const int64_t qbs = (in.tq + p.b_q - 1) / p.b_q, kb = p.k / p.b_k, b = p.b_k;
  BruteMask m(in.hq, std::vector<std::vector<int32_t>>(qbs));
  for (int64_t h = 0; h < in.hq; ++h)
    for (int64_t qb = 0; qb < qbs; ++qb) {
      const BruteRange r = brute_range(in, p, b, qb);
      std::set<int64_t> tokens(st.vertical[h].begin(), st.vertical[h].end());
      for (int64_t i = r.rows_begin; i < r.rows_end; ++i)
        for (int64_t o : st.slash[h]) tokens.insert(brute_visible_end(in, p, i) - o);
      std::vector<double> count(r.hi - r.lo, 0.0);
      for (int64_t t : tokens)
        if (t >= r.lo * b && t < r.hi * b) count[t / b - r.lo] += 1;
      std::vector<int64_t> blocks;
      if (r.hi - r.lo <= kb) {
        for (int64_t j = r.lo; j < r.hi; ++j) blocks.push_back(j);
      } else {
        for (int64_t j : brute_top(count, kb))
          if (count[j] > 0) blocks.push_back(j + r.lo);
      }
      m[h][qb] = brute_expand(blocks, b, p);
    }
  return m;
}

}  // namespace hipstudio::hip::testing
