#include "kernels/dot_f64.h"

#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HIPSTUDIO_DOT_AVX2 1
#include <immintrin.h>
#endif

namespace hipstudio::hip {
namespace {

// The reduction of the eight lane sums, shared by both paths.
inline double combine(const double s[8]) {
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// Portable path: the definition, literally. T is float or double (double rows hold float values).
template <class T>
double dot_portable(const T* a, const float* b, int64_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t d = 0; d < n; ++d) s[d & 7] += static_cast<double>(a[d]) * static_cast<double>(b[d]);
  return combine(s);
}

#ifdef HIPSTUDIO_DOT_AVX2
// Lanes 0..3 of acc0 hold s[0..3], lanes 0..3 of acc1 hold s[4..7]; the tail adds to s[d % 8]
// after the full chunks, which keeps each lane's sum in increasing d.
__attribute__((target("avx2,fma"))) double dot_avx2(const float* a, const float* b, int64_t n) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) {
    const __m256d a0 = _mm256_cvtps_pd(_mm_loadu_ps(a + d)), a1 = _mm256_cvtps_pd(_mm_loadu_ps(a + d + 4));
    const __m256d b0 = _mm256_cvtps_pd(_mm_loadu_ps(b + d)), b1 = _mm256_cvtps_pd(_mm_loadu_ps(b + d + 4));
    acc0 = _mm256_fmadd_pd(a0, b0, acc0);
    acc1 = _mm256_fmadd_pd(a1, b1, acc1);
  }
  double s[8];
  _mm256_storeu_pd(s, acc0);
  _mm256_storeu_pd(s + 4, acc1);
  for (; d < n; ++d) s[d & 7] += static_cast<double>(a[d]) * static_cast<double>(b[d]);
  return combine(s);
}

// Four rows share each converted key chunk: the key conversion is the costly part per row.
__attribute__((target("avx2,fma"))) void dot_rows_avx2(const double* rows, int64_t nrows, const float* key,
                                                       int64_t n, double* out) {
  const int64_t full = n & ~int64_t{7};
  int64_t r = 0;
  for (; r + 4 <= nrows; r += 4) {
    const double* r0 = rows + r * n;
    const double* r1 = r0 + n;
    const double* r2 = r1 + n;
    const double* r3 = r2 + n;
    __m256d a00 = _mm256_setzero_pd(), a01 = _mm256_setzero_pd(), a10 = _mm256_setzero_pd(),
            a11 = _mm256_setzero_pd(), a20 = _mm256_setzero_pd(), a21 = _mm256_setzero_pd(),
            a30 = _mm256_setzero_pd(), a31 = _mm256_setzero_pd();
    for (int64_t d = 0; d < full; d += 8) {
      const __m256d k0 = _mm256_cvtps_pd(_mm_loadu_ps(key + d));
      const __m256d k1 = _mm256_cvtps_pd(_mm_loadu_ps(key + d + 4));
      a00 = _mm256_fmadd_pd(_mm256_loadu_pd(r0 + d), k0, a00);
      a01 = _mm256_fmadd_pd(_mm256_loadu_pd(r0 + d + 4), k1, a01);
      a10 = _mm256_fmadd_pd(_mm256_loadu_pd(r1 + d), k0, a10);
      a11 = _mm256_fmadd_pd(_mm256_loadu_pd(r1 + d + 4), k1, a11);
      a20 = _mm256_fmadd_pd(_mm256_loadu_pd(r2 + d), k0, a20);
      a21 = _mm256_fmadd_pd(_mm256_loadu_pd(r2 + d + 4), k1, a21);
      a30 = _mm256_fmadd_pd(_mm256_loadu_pd(r3 + d), k0, a30);
      a31 = _mm256_fmadd_pd(_mm256_loadu_pd(r3 + d + 4), k1, a31);
    }
    const __m256d acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
    const double* rp[4] = {r0, r1, r2, r3};
    for (int j = 0; j < 4; ++j) {
      double s[8];
      _mm256_storeu_pd(s, acc[j][0]);
      _mm256_storeu_pd(s + 4, acc[j][1]);
      for (int64_t d = full; d < n; ++d) s[d & 7] += rp[j][d] * static_cast<double>(key[d]);
      out[r + j] = combine(s);
    }
  }
  for (; r < nrows; ++r) {
    const double* row = rows + r * n;
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
    for (int64_t d = 0; d < full; d += 8) {
      acc0 = _mm256_fmadd_pd(_mm256_loadu_pd(row + d), _mm256_cvtps_pd(_mm_loadu_ps(key + d)), acc0);
      acc1 = _mm256_fmadd_pd(_mm256_loadu_pd(row + d + 4), _mm256_cvtps_pd(_mm_loadu_ps(key + d + 4)), acc1);
    }
    double s[8];
    _mm256_storeu_pd(s, acc0);
    _mm256_storeu_pd(s + 4, acc1);
    for (int64_t d = full; d < n; ++d) s[d & 7] += row[d] * static_cast<double>(key[d]);
    out[r] = combine(s);
  }
}

bool detect_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
const bool kUseAvx2 = detect_avx2();
#else
const bool kUseAvx2 = false;
#endif

}  // namespace

double dot_f64(const float* a, const float* b, int64_t n) {
#ifdef HIPSTUDIO_DOT_AVX2
  if (kUseAvx2) return dot_avx2(a, b, n);
#endif
  return dot_portable(a, b, n);
}

void dot_rows_f64(const double* rows, int64_t nrows, const float* key, int64_t n, double* out) {
#ifdef HIPSTUDIO_DOT_AVX2
  if (kUseAvx2) {
    dot_rows_avx2(rows, nrows, key, n, out);
    return;
  }
#endif
  dot_rows_f64_portable(rows, nrows, key, n, out);
}

double max_dot_rows_f64(const double* rows, int64_t nrows, const float* key, int64_t n) {
  constexpr int64_t kChunk = 64;
  double buf[kChunk];
  double best = -std::numeric_limits<double>::infinity();
  for (int64_t r0 = 0; r0 < nrows; r0 += kChunk) {
    const int64_t m = nrows - r0 < kChunk ? nrows - r0 : kChunk;
    dot_rows_f64(rows + r0 * n, m, key, n, buf);
    for (int64_t r = 0; r < m; ++r) {
      if (buf[r] > best) best = buf[r];  // NaN compares false: ignored
    }
  }
  return best;
}

bool dot_f64_uses_avx2() { return kUseAvx2; }

double dot_f64_portable(const float* a, const float* b, int64_t n) { return dot_portable(a, b, n); }

void dot_rows_f64_portable(const double* rows, int64_t nrows, const float* key, int64_t n, double* out) {
  for (int64_t r = 0; r < nrows; ++r) out[r] = dot_portable(rows + r * n, key, n);
}

}  // namespace hipstudio::hip
