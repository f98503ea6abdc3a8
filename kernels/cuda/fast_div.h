#pragma once
// Division by a divisor fixed at launch time, as one multiply-high, an add and a shift
// (Granlund & Montgomery, "Division by invariant integers using multiplication", 1994): the
// kernels turn a grid index into coordinates and a key-list entry into a block slot without the
// ~20-instruction integer division sequence (v15 in kernels/BENCHMARKS.md: six of them sat on the
// decode step's critical path before its first load). Plain C++ so that a CPU test can check it
// against `/` (tests/kernels/fast_div_test.cpp).
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/host_device.h"

namespace hipstudio::gpu {

class FastDiv {
 public:
  FastDiv() = default;  // divides by 1
  // divisor in [1, 2^31); quotients are exact for dividends in [0, 2^31).
  explicit FastDiv(uint32_t divisor) : d_(divisor) {
    if (divisor == 0 || divisor >= (uint32_t{1} << 31)) throw std::invalid_argument("FastDiv divisor out of range");
    while ((uint64_t{1} << shift_) < divisor) ++shift_;
    // The 33-bit magic number floor(2^(32 + shift) / d) + 1, without its top bit (added back as n).
    magic_ = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift_) - divisor)) / divisor + 1);
  }
  HIPSTUDIO_HOST_DEVICE uint32_t div(uint32_t n) const {
    // n < 2^31 keeps hi + n below 2^32.
    return (mulhi(n, magic_) + n) >> shift_;
  }
  HIPSTUDIO_HOST_DEVICE uint32_t mod(uint32_t n) const { return n - div(n) * d_; }
  HIPSTUDIO_HOST_DEVICE uint32_t divisor() const { return d_; }

 private:
  HIPSTUDIO_HOST_DEVICE static uint32_t mulhi(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
  }
  uint32_t d_ = 1, magic_ = 1, shift_ = 0;
};

}  // namespace hipstudio::gpu
