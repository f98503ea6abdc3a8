#pragma once
// A second, deliberately plain implementation of the search's steps (paper section 3.2), written from the rules
// (full sorts, no caching, no shared helpers from kernels/ except the input view), so that the
// reference can be compared with it mask for mask.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"

namespace hipstudio::hip::testing {

// dot_f64's written definition (eight lane sums, fixed combination).
inline double naive_dot(const float* a, const float* b, int64_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t d = 0; d < n; ++d) s[d % 8] += static_cast<double>(a[d]) * static_cast<double>(b[d]);
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

inline int64_t naive_floor_div(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
}

struct NaiveResult {
  std::vector<int32_t> blocks;  // ascending
  int64_t lo = 0, hi = 0, dense_from = 0;
  int iterations = 0;
  int64_t branches = 0;
};

inline int64_t naive_pos(const AttentionInputs& in, const HipParams& p, int64_t i) {
  if (!p.causal) return in.tk - 1;
  return in.positions ? in.positions[i] : in.tk - in.tq + i;
}

// Score of representative block r for (h, qb): max over sampled rows x sampled keys.
inline double naive_score(const AttentionInputs& in, const HipParams& p, int64_t h, int64_t qb, int64_t r) {
  const int64_t g = h / (in.hq / in.hkv);
  const int64_t row_end = std::min(in.tq, (qb + 1) * p.b_q);
  double best = -INFINITY;
  for (int64_t i = qb * p.b_q; i < row_end; i += p.b_sq) {
    for (int64_t u = 0; u < p.b_k / p.b_sk; ++u) {
      const int64_t key = r * p.b_k + u * p.b_sk;
      const double s = naive_dot(in.q + (h * in.tq + i) * in.d, in.k + (g * in.tk + key) * in.d, in.d);
      if (s > best) best = s;
    }
  }
  return best;
}

inline NaiveResult naive_hip_mask(const AttentionInputs& in, const HipParams& p, int64_t h, int64_t qb) {
  NaiveResult res;
  const int64_t kb = p.k / p.b_k;
  const int64_t p0 = naive_pos(in, p, qb * p.b_q);
  res.lo = p.sink / p.b_k;
  res.hi = std::max(res.lo, naive_floor_div(p0 + 1 - p.window, p.b_k));
  res.dense_from = res.hi * p.b_k;
  const int64_t n = res.hi - res.lo;
  if (n <= kb) {
    for (int64_t j = res.lo; j < res.hi; ++j) res.blocks.push_back(static_cast<int32_t>(j));
    return res;
  }
  std::vector<std::pair<int64_t, int64_t>> nodes;
  for (int64_t j = 0; j < kb; ++j) nodes.push_back({res.lo + j * n / kb, res.lo + (j + 1) * n / kb});
  auto any_big = [&] {
    for (auto& nd : nodes) {
      if (nd.second - nd.first > 1) return true;
    }
    return false;
  };
  while (any_big()) {
    struct Br {
      int64_t a, b;
      double score;
    };
    std::vector<Br> brs;
    for (auto& nd : nodes) {
      const int64_t a = nd.first, b = nd.second;
      if (b - a >= 2) {
        const int64_t m = a + (b - a) / 2;
        brs.push_back({a, m, 0});
        brs.push_back({m, b, 0});
      } else {
        brs.push_back({a, b, 0});
      }
    }
    for (Br& br : brs) {
      const int64_t len = br.b - br.a;
      const int64_t r = br.a + std::min(len - 1, static_cast<int64_t>(std::floor(p.rho * static_cast<double>(len))));
      br.score = naive_score(in, p, h, qb, r);
    }
    res.branches += static_cast<int64_t>(brs.size());
    std::sort(brs.begin(), brs.end(), [](const Br& x, const Br& y) {
      return x.score != y.score ? x.score > y.score : x.a < y.a;
    });
    brs.resize(static_cast<size_t>(kb));
    std::sort(brs.begin(), brs.end(), [](const Br& x, const Br& y) { return x.a < y.a; });
    res.iterations += 1;
    nodes.clear();
    for (const Br& br : brs) nodes.push_back({br.a, br.b});
  }
  for (auto& nd : nodes) res.blocks.push_back(static_cast<int32_t>(nd.first));
  return res;
}

}  // namespace hipstudio::hip::testing
