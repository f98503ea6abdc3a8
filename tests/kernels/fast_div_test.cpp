// kernels/cuda/fast_div.h: the multiply-shift division the CUDA kernels use for grid coordinates
// and block slots must equal `/` and `%` for every divisor they can see and every dividend below
// 2^31 (checked exhaustively near the edges that break a wrong magic number or shift).
#include "kernels/cuda/fast_div.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace hipstudio {
namespace {

using gpu::FastDiv;

void expect_exact(uint32_t d, uint32_t n) {
  const FastDiv f(d);
  ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
  ASSERT_EQ(f.mod(n), n % d) << n << " % " << d;
}

TEST(FastDiv, MatchesDivisionNearEveryMultipleForSmallDivisors) {
  for (uint32_t d = 1; d <= 300; ++d)
    for (uint32_t q = 0; q < 2000; ++q)
      for (int64_t e = -1; e <= 1; ++e) {
        const int64_t n = static_cast<int64_t>(q) * d + e;
        if (n >= 0) expect_exact(d, static_cast<uint32_t>(n));
      }
}

TEST(FastDiv, MatchesDivisionAtTheTopOfTheRange) {
  const uint32_t top = (uint32_t{1} << 31) - 1;
  std::vector<uint32_t> divisors{1, 2, 3, 5, 6, 7, 24, 31, 32, 33, 100, 255, 256, 257, 4095, 65537, 1000003, top / 2, top - 1, top};
  for (uint32_t d : divisors)
    for (uint32_t k = 0; k < 5000; ++k) expect_exact(d, top - k);
}

TEST(FastDiv, MatchesDivisionOnRandomPairs) {
  std::mt19937_64 rng(20261123);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t d = 1 + static_cast<uint32_t>(rng() % ((uint64_t{1} << (1 + rng() % 31)) - 1));
    const uint32_t n = static_cast<uint32_t>(rng() % (uint64_t{1} << 31));
    expect_exact(d, n);
  }
}

TEST(FastDiv, RejectsDivisorsItCannotServe) {
  EXPECT_THROW(FastDiv(0), std::invalid_argument);
  EXPECT_THROW(FastDiv(uint32_t{1} << 31), std::invalid_argument);
}

}  // namespace
}  // namespace hipstudio
