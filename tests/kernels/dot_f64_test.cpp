// dot_f64 follows its written definition bit for bit (the masks of every backend depend on it),
// on whichever path (AVX2 or portable) this machine takes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/dot_f64.h"
#include "tests/kernels/hip_test_inputs.h"

namespace hipstudio::hip {
namespace {

// The definition from dot_f64.h, written independently: eight lane sums, fixed combination.
double dot_definition(const std::vector<float>& a, const std::vector<float>& b, size_t off_a, size_t off_b, int64_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t d = 0; d < n; ++d) {
    const double prod = static_cast<double>(a[off_a + d]) * static_cast<double>(b[off_b + d]);
    s[d % 8] = s[d % 8] + prod;
  }
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

TEST(DotF64, MatchesTheDefinitionBitForBit) {
  testing::TestRng rng(7);
  for (int64_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 48, 64, 100, 128, 129}) {
    std::vector<float> a(static_cast<size_t>(n) + 1), b(static_cast<size_t>(n) + 1);
    // Wide dynamic range makes the summation order visible in the last bits.
    for (auto& x : a) x = static_cast<float>(rng.normal() * std::exp(6 * rng.normal()));
    for (auto& x : b) x = static_cast<float>(rng.normal() * std::exp(6 * rng.normal()));
    const double expect = dot_definition(a, b, 0, 0, n);
    EXPECT_TRUE(same_bits(dot_f64(a.data(), b.data(), n), expect)) << "n=" << n;
    EXPECT_TRUE(same_bits(dot_f64_portable(a.data(), b.data(), n), expect)) << "n=" << n;
    // Unaligned start.
    EXPECT_TRUE(same_bits(dot_f64(a.data() + 1, b.data() + 1, n - (n > 0 ? 1 : 0)),
                          dot_definition(a, b, 1, 1, n - (n > 0 ? 1 : 0))))
        << "n=" << n;
  }
}

TEST(DotF64, SequentialSumWouldDiffer) {
  // Guards the test above: with these inputs a plain left-to-right sum gives other bits, so the
  // comparison really checks the order.
  testing::TestRng rng(11);
  int differs = 0;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> a(64), b(64);
    for (auto& x : a) x = static_cast<float>(rng.normal() * std::exp(6 * rng.normal()));
    for (auto& x : b) x = static_cast<float>(rng.normal() * std::exp(6 * rng.normal()));
    double seq = 0;
    for (int d = 0; d < 64; ++d) seq += static_cast<double>(a[d]) * b[d];
    differs += !same_bits(seq, dot_f64(a.data(), b.data(), 64));
  }
  EXPECT_GT(differs, 0);
}

TEST(DotF64, RowsVariantEqualsSingleDots) {
  testing::TestRng rng(3);
  for (int64_t n : {1, 5, 8, 13, 64, 72}) {
    for (int64_t rows : {1, 2, 3, 4, 5, 9, 70}) {
      std::vector<float> q(static_cast<size_t>(rows * n)), key(static_cast<size_t>(n));
      for (auto& x : q) x = static_cast<float>(rng.normal() * std::exp(4 * rng.normal()));
      for (auto& x : key) x = static_cast<float>(rng.normal() * std::exp(4 * rng.normal()));
      std::vector<double> qd(q.begin(), q.end()), out(static_cast<size_t>(rows));
      std::vector<double> portable(static_cast<size_t>(rows));
      dot_rows_f64(qd.data(), rows, key.data(), n, out.data());
      dot_rows_f64_portable(qd.data(), rows, key.data(), n, portable.data());
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t r = 0; r < rows; ++r) {
        const double expect = dot_definition(q, key, static_cast<size_t>(r * n), 0, n);
        EXPECT_TRUE(same_bits(out[r], expect)) << "n=" << n << " rows=" << rows << " r=" << r;
        EXPECT_TRUE(same_bits(portable[r], expect)) << "n=" << n << " rows=" << rows << " r=" << r;
        best = std::max(best, expect);
      }
      EXPECT_TRUE(same_bits(max_dot_rows_f64(qd.data(), rows, key.data(), n), best));
    }
  }
}

TEST(DotF64, MaxIgnoresNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<double> rows = {1.0, nan, 2.0};  // three rows of length 1
  const float key = 3.0f;
  EXPECT_EQ(max_dot_rows_f64(rows.data(), 3, &key, 1), 6.0);
  std::vector<double> all_nan = {nan, nan};
  EXPECT_EQ(max_dot_rows_f64(all_nan.data(), 2, &key, 1), -std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace hipstudio::hip
