#pragma once
// The per-key arithmetic of the mask kernels' selections: the order-preserving score key (both
// search kernels) and the digits of a radix pass of kernels/cuda/mask_cluster_kernel.cu's
// `select_from_top`. Plain C++ too: the CPU model of that selection in
// tests/kernels/radix_select_model_test.cpp uses the same functions.
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

// The score of a key of score_key32 (its inverse, but -0 comes back as +0).
HIPSTUDIO_HOST_DEVICE float score_of_key32(uint32_t key) {
  const uint32_t u = (key >> 31) ? (key & 0x7fffffffu) : ~key;
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float s;
  std::memcpy(&s, &u, 4);
  return s;
#endif
}

// Where one key stands in a pass: whether it matches the prefix, and its digit.
struct PassDigit {
  bool match;
  uint32_t digit;
};

// A pass from the top: keys matching `prefix` above bit shift + bits, their digit at `shift`.
HIPSTUDIO_HOST_DEVICE PassDigit radix_pass_digit(uint32_t key, uint32_t prefix, int shift, int bits) {
  const int top = shift + bits;
  return {top == 32 || (key >> top) == (prefix >> top), (key >> shift) & ((1u << bits) - 1u)};
}

// The next pass's digit: 5 bits lower, the last one the bits that remain. Returns false after bit 0.
HIPSTUDIO_HOST_DEVICE bool next_radix_digit(int& shift, int& bits) {
  if (shift == 0) return false;
  if (shift > 5) shift -= 5;
  else bits = shift, shift = 0;
  return true;
}

}  // namespace hipstudio::gpu
