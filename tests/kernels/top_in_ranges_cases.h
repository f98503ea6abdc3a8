#pragma once
// Score matrices for the ranked selection over column ranges (kernels/methods/torch/
// tensor_top_blocks.h's top_in_ranges) and its brute-force definition: for each row, the columns of
// its range sorted by score descending, ties to the lower column, the first `take` of them listed
// ascending, -1 after. Cases: heavy ties (scores from a few integers), -inf entries, -0.0 beside
// +0.0 (equal), ranges empty, short, past the last column and covering all of it, takes from one to
// more than the columns.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace hipstudio::testing {

struct TopInRangesCase {
  std::string name;
  at::Tensor scores;  // (g, m, n) float64 on the CPU
  at::Tensor hi;      // (m) int64
  int64_t lo = 0, take = 1;
};

inline std::vector<TopInRangesCase> top_in_ranges_cases() {
  std::vector<TopInRangesCase> cases;
  std::mt19937_64 rng(20261203);
  auto make = [&](const std::string& name, int64_t g, int64_t m, int64_t n, int64_t lo, int64_t take, int distinct) {
    TopInRangesCase c;
    c.name = name;
    c.lo = lo, c.take = take;
    std::vector<double> s(static_cast<size_t>(g * m * n));
    std::uniform_int_distribution<int> level(0, distinct - 1);
    std::uniform_real_distribution<double> u(-3.0, 3.0);
    for (double& x : s) {
      x = distinct > 0 ? static_cast<double>(level(rng)) - distinct / 2 : u(rng);
      const uint64_t r = rng() % 97;
      if (r == 0) x = -std::numeric_limits<double>::infinity();
      if (r == 1) x = -0.0;
      if (r == 2) x = 0.0;
    }
    c.scores = at::tensor(s, at::kDouble).view({g, m, n});
    std::vector<int64_t> hi(static_cast<size_t>(m));
    std::uniform_int_distribution<int64_t> end(0, n + 5);
    for (int64_t i = 0; i < m; ++i) hi[static_cast<size_t>(i)] = i == 0 ? lo : i == 1 ? n + 3 : i == 2 ? n : end(rng);
    c.hi = at::tensor(hi, at::kLong);
    cases.push_back(c);
  };
  make("ties_small", 2, 9, 40, 0, 5, 3);
  make("ties_lo_sink", 3, 17, 300, 4, 37, 5);
  make("distinct", 2, 13, 1000, 2, 64, 0);
  make("take_one", 1, 11, 257, 0, 1, 4);
  make("take_past_columns", 2, 7, 50, 1, 80, 2);
  make("all_equal", 2, 6, 600, 0, 100, 1);
  make("long_rows", 1, 5, 70000, 8, 256, 0);
  return cases;
}

// The rule, one row at a time, from the float64 scores.
inline at::Tensor top_in_ranges_brute(const TopInRangesCase& c) {
  const int64_t g = c.scores.size(0), m = c.scores.size(1), n = c.scores.size(2);
  const at::Tensor s = c.scores.contiguous();
  const double* p = s.data_ptr<double>();
  at::Tensor out = at::full({g, m, c.take}, -1, at::kInt);
  for (int64_t h = 0; h < g; ++h)
    for (int64_t i = 0; i < m; ++i) {
      const int64_t end = std::min(n, c.hi[i].item<int64_t>());
      std::vector<int64_t> cols;
      for (int64_t j = c.lo; j < end; ++j) cols.push_back(j);
      const double* row = p + (h * m + i) * n;
      std::stable_sort(cols.begin(), cols.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
      if (static_cast<int64_t>(cols.size()) > c.take) cols.resize(static_cast<size_t>(c.take));
      std::sort(cols.begin(), cols.end());
      for (size_t t = 0; t < cols.size(); ++t) out[h][i][static_cast<int64_t>(t)] = static_cast<int32_t>(cols[t]);
    }
  return out;
}

}  // namespace hipstudio::testing
