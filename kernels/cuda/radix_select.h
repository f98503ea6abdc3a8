#pragma once
// The per-key arithmetic of the mask kernels' selections: the order-preserving score key (both
// search kernels) and the digits of a radix pass of kernels/cuda/mask_cluster_kernel.cu, from the
// top (`select_from_top`) or in the seeded window (`select_seeded`, v17). Plain C++ too: the CPU model
// of the seeded selection in tests/kernels/seeded_select_model_test.cpp uses the same functions.
#include <cstdint>
#include <cstring>

#include "kernels/cuda/host_device.h"

namespace hipstudio::gpu {

// Order-preserving key of a float score (larger score, larger key; -0 == +0). Real keys are >=
// 0x007fffff (the key of -inf), so 0 marks "no branch".
HIPSTUDIO_HOST_DEVICE uint32_t score_key32(float s) {
  if (s == 0.f) s = 0.f;
#ifdef __CUDA_ARCH__
  const uint32_t u = __float_as_uint(s);
#else
  uint32_t u;
  std::memcpy(&u, &s, 4);
#endif
  return (u >> 31) ? ~u : (u | 0x80000000u);
}

// The seeded pass: 32 sub-buckets of 2^kSeedSub keys (1/32 of a float binade each), one binade in
// all, centred on the previous iteration's threshold.
constexpr int kSeedSub = 18;
constexpr uint32_t kSeedWindow = 32u << kSeedSub;

// The window's first key: a multiple of 2^kSeedSub, 16 sub-buckets below the seed's, clamped so
// that the window stays inside the 32-bit keys.
HIPSTUDIO_HOST_DEVICE uint32_t seed_window_start(uint32_t seed) {
  const uint32_t sub = seed >> kSeedSub, last = (1u << (32 - kSeedSub)) - 32u;
  const uint32_t first = sub > 16u ? sub - 16u : 0u;
  return (first < last ? first : last) << kSeedSub;
}

// Where one key stands in a pass: matching the prefix (or inside the window) with a 5-bit digit,
// or above the window (seeded pass only).
struct PassDigit {
  bool match, above;
  uint32_t digit;
};

HIPSTUDIO_HOST_DEVICE PassDigit seeded_pass_digit(uint32_t key, uint32_t window_start) {
  const uint32_t offset = key - window_start;  // wraps for keys below the window
  const bool in_reach = key >= window_start;
  return {in_reach && offset < kSeedWindow, in_reach && offset >= kSeedWindow, (offset >> kSeedSub) & 31u};
}

// A pass from the top: keys matching `prefix` above bit shift + bits, their digit at `shift`.
HIPSTUDIO_HOST_DEVICE PassDigit radix_pass_digit(uint32_t key, uint32_t prefix, int shift, int bits) {
  const int top = shift + bits;
  return {top == 32 || (key >> top) == (prefix >> top), false, (key >> shift) & ((1u << bits) - 1u)};
}

// The next pass's digit: 5 bits lower, the last one the bits that remain. Returns false after bit 0.
HIPSTUDIO_HOST_DEVICE bool next_radix_digit(int& shift, int& bits) {
  if (shift == 0) return false;
  if (shift > 5) shift -= 5;
  else bits = shift, shift = 0;
  return true;
}

}  // namespace hipstudio::gpu
