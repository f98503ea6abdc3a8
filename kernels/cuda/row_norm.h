#pragma once
// RMSNorm of rows as one kernel, optionally after a residual add: the forward pass's normalisation
// (engine/model/layer_math.h) on CUDA. Eagerly it was eight LibTorch kernels a row block (convert,
// square, mean, add, rsqrt, two multiplies, convert back); in a decode step each of those is a
// launch of a few microseconds on a single row, and per layer they added up to a third of the step.
// Same arithmetic as the LibTorch form: float32 throughout, sum of squares / dim, x * rsqrt(mean +
// eps) * weight, rounded once to the row dtype; the residual sum is rounded to the row dtype first,
// as LibTorch's add is. Plain C++ interface (no CUDA headers), like hip_cuda.h.
#include <cstdint>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

struct RowNormLaunch {
  const void* x = nullptr;         // (rows, dim), rows `row_stride` elements apart, last dim contiguous
  const void* residual = nullptr;  // optional, same shape: the normalised rows are x + residual
  void* sum = nullptr;             // with residual: receives x + residual (rows, dim) contiguous
  const float* weight = nullptr;   // (dim) float32
  void* out = nullptr;             // (rows, dim) contiguous, x's dtype
  ElementType dtype = ElementType::kF32;
  int64_t rows = 0, dim = 0, row_stride = 0, residual_stride = 0;
  double eps = 1e-5;
  void* stream = nullptr;          // cudaStream_t; null: the legacy default stream
};

void rms_norm_rows(const RowNormLaunch& launch);

}  // namespace hipstudio::gpu
