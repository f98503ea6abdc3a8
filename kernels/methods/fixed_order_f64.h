#pragma once
// Float64 arithmetic that the CPU references and the tensor implementations (torch/) compute to the
// same bits on every device. A method's mask depends on comparisons of its scores, so equal bits
// give equal masks, ties included. Only correctly rounded operations are used (+, -, *, /,
// comparisons, nearbyint), each one separate and in a fixed order; products of float32 values are
// exact in float64, so a fused multiply-add could not change them anyway. libm's exp and CUDA's
// exp differ in the last bit, hence exp_f64 below: the same polynomial everywhere.
#include <cmath>
#include <cstdint>

namespace hipstudio::hip::methods {

// exp_f64(x) = 0 for x < kExpFloor (and for -infinity): 2^n stays a normal number, so the
// scaling by it is exact.
inline constexpr double kExpFloor = -708.0;
inline constexpr double kLog2e = 1.4426950408889634;
// ln 2 split so that n * kLn2Hi is exact for |n| < 2^11 (kLn2Hi has 32 significant bits).
inline constexpr double kLn2Hi = 6.93147180369123816490e-01;
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;
inline constexpr int kExpDegree = 13;
// Taylor coefficients 1 / j!, j = 0..13 (each a correctly rounded constant-expression division).
inline constexpr double kExpCoef[kExpDegree + 1] = {
    1.0,         1.0,          1.0 / 2,         1.0 / 6,          1.0 / 24,          1.0 / 120,
    1.0 / 720,   1.0 / 5040,   1.0 / 40320,     1.0 / 362880,     1.0 / 3628800,     1.0 / 39916800,
    1.0 / 479001600, 1.0 / 6227020800};

// exp(x) for x <= 0 (softmax numerators, after the max was subtracted); relative error below 1e-15:
//   n = nearbyint(x * log2 e) (ties to even), r = (x - n kLn2Hi) - n kLn2Lo, |r| <= 0.35,
//   p = Horner's rule over kExpCoef from the top (p = p * r + c_j), result p * 2^n.
inline double exp_f64(double x) {
  if (!(x >= kExpFloor)) return 0.0;
  const double n = std::nearbyint(x * kLog2e);
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  double p = kExpCoef[kExpDegree];
  for (int j = kExpDegree - 1; j >= 0; --j) p = p * r + kExpCoef[j];
  return p * std::ldexp(1.0, static_cast<int>(n));
}

// The pairwise sum of v[0..n) that a tensor reduction can reproduce: pad to the next power of two
// m with +0.0, then while m > 1: m /= 2, v[i] = v[i] + v[i + m] for i < m. Extra zero padding
// leaves the result unchanged (x + 0 = x), so any power of two >= n gives the same bits.
// Overwrites v (which must hold at least the padded size when n is not a power of two: use
// tree_sum_padded_size).
inline int64_t tree_sum_padded_size(int64_t n) {
  int64_t m = 1;
  while (m < n) m *= 2;
  return m;
}
inline double tree_sum_in_place(double* v, int64_t n) {
  if (n <= 0) return 0.0;
  int64_t m = tree_sum_padded_size(n);
  for (int64_t i = n; i < m; ++i) v[i] = 0.0;
  while (m > 1) {
    m /= 2;
    for (int64_t i = 0; i < m; ++i) v[i] = v[i] + v[i + m];
  }
  return v[0];
}

}  // namespace hipstudio::hip::methods
