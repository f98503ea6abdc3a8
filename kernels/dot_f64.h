#pragma once
// The one dot product every HiP score goes through: float32 inputs, float64 accumulation, and a
// FIXED summation order so that a mask (which depends on comparisons of scores) can be reproduced
// bit for bit by any backend.
//
// Definition (n = length): products a[d]*b[d] are exact in float64 (two 24-bit mantissas fit in
// 53 bits), so fused or separate multiply-add give the same result. Eight partial sums
//   s[l] = sum over d = l, l+8, l+16, ... (increasing d, starting from +0.0) of a[d]*b[d]
// are combined as ((s0+s4) + (s2+s6)) + ((s1+s5) + (s3+s7)).
// The AVX2 path (chosen at run time on x86-64) and the portable path both compute exactly this.
#include <cstdint>

namespace hipstudio::hip {

// dot(a, b) for float32 vectors of length n, by the definition above.
double dot_f64(const float* a, const float* b, int64_t n);

// out[r] = dot(rows[r], key) for r in [0, nrows), where rows is (nrows, n) float64 holding float32
// values (converted exactly beforehand, so that the rows are converted once and reused), same order.
void dot_rows_f64(const double* rows, int64_t nrows, const float* key, int64_t n, double* out);

// max over r of dot(rows[r], key); NaN results are ignored (an all-NaN set gives -infinity), so a
// NaN in the inputs can never make a ranking undefined.
double max_dot_rows_f64(const double* rows, int64_t nrows, const float* key, int64_t n);

// Whether the AVX2 path is in use (for the benchmark's table header).
bool dot_f64_uses_avx2();

// The portable paths, always available (tests compare them with the dispatched ones).
double dot_f64_portable(const float* a, const float* b, int64_t n);
void dot_rows_f64_portable(const double* rows, int64_t nrows, const float* key, int64_t n, double* out);

}  // namespace hipstudio::hip
