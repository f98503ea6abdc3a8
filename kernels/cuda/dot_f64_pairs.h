#pragma once
// dot_f64's order (kernels/dot_f64.h) for every pair of rows on CUDA: out[r, t] = dot(rows[r],
// keys[t]) over float64 values that hold float32 ones, eight lanes over d = l, l + 8, ... from +0.0,
// combined ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)). The products are exact in float64, so
// each lane's add is correctly rounded whether or not it is fused: the bits are the CPU
// reference's and the tensor ops' (kernels/methods/torch/tensor_fixed_order.h). Plain C++
// interface (no CUDA headers), like hip_cuda.h.
#include <cstdint>

namespace hipstudio::gpu {

struct DotF64PairsLaunch {
  const double* rows = nullptr;  // (n_rows, d) contiguous
  const double* keys = nullptr;  // (n_keys, d) contiguous
  double* out = nullptr;         // (n_rows, n_keys) contiguous: receives the dots
  int64_t n_rows = 0, n_keys = 0, d = 0;
  void* stream = nullptr;        // cudaStream_t; null: the legacy default stream
};

// Whether the kernel takes the shape (d up to 512).
bool dot_f64_pairs_fits(const DotF64PairsLaunch& launch);
void dot_f64_pairs(const DotF64PairsLaunch& launch);

}  // namespace hipstudio::gpu
