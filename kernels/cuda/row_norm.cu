#include "kernels/cuda/row_norm.h"

#include "kernels/cuda/common.cuh"

namespace hipstudio::gpu {

namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ float load(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}
template <>
__device__ __forceinline__ float load<__nv_bfloat16>(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
template <>
__device__ __forceinline__ float load<__half>(const __half* p, int64_t i) {
  return __half2float(p[i]);
}
template <typename T>
__device__ __forceinline__ T store_as(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 store_as<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half store_as<__half>(float v) {
  return __float2half_rn(v);
}

// One block per row. Each thread keeps its elements' sum of squares; a warp-shuffle then shared
// reduction gives the row's, and every thread writes its elements scaled.
template <typename T>
__global__ void rms_norm_rows_kernel(const T* x, const T* residual, T* sum, const float* weight, T* out, int64_t dim,
                                     int64_t row_stride, int64_t residual_stride, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * row_stride;
  const T* rr = residual ? residual + row * residual_stride : nullptr;
  T* sr = sum ? sum + row * dim : nullptr;
  T* outr = out + row * dim;
  float squares = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    float v = load(xr, i);
    if (rr) {
      // The residual sum is rounded to T before it is normalised, as LibTorch's add in T is.
      const T rounded = store_as<T>(v + load(rr, i));
      sr[i] = rounded;
      v = load(&rounded, 0);
    }
    squares += v * v;
  }
  __shared__ float warp_sums[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = squares;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  const float scale = rsqrtf(total / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const float v = rr ? load(sr, i) : load(xr, i);
    outr[i] = store_as<T>(v * scale * weight[i]);
  }
}

template <typename T>
void launch_rows(const RowNormLaunch& l) {
  rms_norm_rows_kernel<T><<<static_cast<unsigned>(l.rows), kThreads, 0, as_stream(l.stream)>>>(
      static_cast<const T*>(l.x), static_cast<const T*>(l.residual), static_cast<T*>(l.sum), l.weight,
      static_cast<T*>(l.out), l.dim, l.row_stride, l.residual_stride, static_cast<float>(l.eps));
  HIP_CUDA_CHECK_LAUNCH("rms_norm_rows");
}

}  // namespace

void rms_norm_rows(const RowNormLaunch& l) {
  if (!l.x || !l.weight || !l.out) throw_arg("rms_norm_rows needs x, weight and out pointers");
  if (l.residual && !l.sum) throw_arg("rms_norm_rows with a residual needs a sum pointer");
  if (l.rows < 0 || l.rows > INT32_MAX || l.dim < 1) throw_arg("rms_norm_rows: bad shape");
  if (l.rows == 0) return;
  switch (l.dtype) {
    case ElementType::kF32: launch_rows<float>(l); break;
    case ElementType::kBF16: launch_rows<__nv_bfloat16>(l); break;
    case ElementType::kF16: launch_rows<__half>(l); break;
  }
}

}  // namespace hipstudio::gpu
