#pragma once
// Shared device helpers of the HiP kernels: error checks, the search range (a copy of
// kernels/search_range.h for the device), element conversion and the bf16/f16 tensor-core mma.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

[[noreturn]] void throw_cuda(cudaError_t e, const char* what, const char* file, int line);
[[noreturn]] void throw_arg(const std::string& what);
// Thread-block clusters can be launched (sm_90 and newer); asked once.
bool device_supports_clusters();
// Compute capability 9.0 (H100, H200: the sm_90a code of the wgmma kernels runs there only); asked once.
bool device_is_sm90();
// The rules of hip::validate_hip_params (kernels/hip_param_rules.h, header-only so that this library
// does not link back into hipstudio_kernels); throws CudaError naming the broken rule.
void check_hip_params(const hip::HipParams& p);

#define HIP_CUDA_CHECK(call)                                                      \
  do {                                                                            \
    cudaError_t hip_cuda_err_ = (call);                                           \
    if (hip_cuda_err_ != cudaSuccess) ::hipstudio::gpu::throw_cuda(hip_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)
// After every launch: a bad configuration or a launch failure becomes a CudaError.
#define HIP_CUDA_CHECK_LAUNCH(name) HIP_CUDA_CHECK(cudaGetLastError())

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// Device copy of search_range (kernels/search_range.h): keep the two in step.
struct DevRange {
  int64_t row_begin, row_end, p0, lo, hi, dense_from;
};

// floor(a / b), b >= 1. In 32 bits where both fit (token positions are below 2^31 and HiP sizes at
// most INT32_MAX, so always in practice): a 64-bit division is a ~100-instruction routine, and the
// few-search kernels wait on this one before their first load (v16).
__device__ __forceinline__ int64_t dev_floor_div(int64_t a, int64_t b) {
  if (a >= 0 && a <= INT32_MAX && b <= INT32_MAX) return static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

__device__ __forceinline__ int64_t dev_position(const int64_t* positions, int64_t tq, int64_t tk, int64_t i) {
  return positions ? positions[i] : tk - tq + i;
}

__device__ __forceinline__ int64_t dev_visible_end(const int64_t* positions, int64_t tq, int64_t tk, bool causal,
                                                   int64_t i) {
  return causal ? dev_position(positions, tq, tk, i) : tk - 1;
}

__device__ __forceinline__ DevRange dev_search_range(const hip::HipParams& p, const int64_t* positions, int64_t tq,
                                                     int64_t tk, int64_t qb) {
  DevRange r;
  r.row_begin = qb * p.b_q;
  r.row_end = r.row_begin + p.b_q < tq ? r.row_begin + p.b_q : tq;
  r.p0 = dev_visible_end(positions, tq, tk, p.causal, r.row_begin);
  r.lo = dev_floor_div(p.sink, p.b_k);
  const int64_t top = dev_floor_div(r.p0 + 1 - p.window, p.b_k);
  r.hi = top > r.lo ? top : r.lo;
  r.dense_from = r.hi * p.b_k;
  return r;
}

template <class T>
__device__ __forceinline__ float to_f32(T x);
template <>
__device__ __forceinline__ float to_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <>
__device__ __forceinline__ float to_f32<__half>(__half x) { return __half2float(x); }

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }

// Two floats packed as the 16-bit type's pair: lo in the low half (the first element).
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// D = A (16x16, row) * B (16x8, col) + C, float accumulators. Not volatile: a pure function of
// its registers, so the compiler may interleave independent mma chains (v15). Fragment layout (g = lane / 4,
// c = lane % 4): a[0] = A[g][2c..], a[1] = A[g+8][2c..], a[2] = A[g][2c+8..], a[3] = A[g+8][2c+8..];
// b[0] = B[2c..][g], b[1] = B[2c+8..][g]; d[0..1] = D[g][2c..], d[2..3] = D[g+8][2c..].
template <class T>
__device__ __forceinline__ void mma16816(float* d, const uint32_t* a, const uint32_t* b);
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float* d, const uint32_t* a, const uint32_t* b) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma16816<__half>(float* d, const uint32_t* a, const uint32_t* b) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Programmatic dependent launch (sm_90), for the decode step's chain of small kernels: a kernel
// launched with launch_after_prior (below) may start while the kernel before it in the stream ends,
// and runs until wait_for_prior_grid() on work that does not depend on that kernel (weights, a
// cached mask's block lists, the step's positions: all written before that kernel, and any kernel
// that let it start at once, started), writing no memory those kernels read.
// wait_for_prior_grid: wait here until the kernel before has finished and its writes are visible.
// A no-op when launched without the attribute, or built for an older architecture.
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// Lets the kernel after this one in the stream start (its part before wait_for_prior_grid) before
// this one finishes. Called after this kernel's own wait_for_prior_grid, the next kernel's early
// part may rely on everything before this one being complete; called before it (the decode step's
// q/k/v projection and RoPE kernel), the next kernel's early part runs beside this kernel and the
// ones before it, and may read only what was complete before they started and write nothing they
// read.
__device__ __forceinline__ void let_next_grid_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Whether the loaded code of `kernel` waits for the previous grid (wait_for_prior_grid): only code
// compiled for sm_90 or later has the instruction. Asked of the loaded code, not of the device: an
// sm_80-only build run on an H100 is JIT-compiled from compute_80 PTX without it, and launched as a
// dependent it would read its inputs before the kernel writing them had finished. Asked once a kernel.
bool kernel_waits_for_prior_grid(const void* kernel);

// Launches `kernel` as a programmatic dependent of the kernel before it in the stream where its
// code waits for it (kernel_waits_for_prior_grid), else as a plain launch.
template <class... Params, class... Args>
void launch_after_prior(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                        Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute overlap[1];
  overlap[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = overlap;
  config.numAttrs = kernel_waits_for_prior_grid(reinterpret_cast<const void*>(kernel)) ? 1 : 0;
  HIP_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

// Raises a kernel's dynamic shared memory limit when it needs more than 48 KB, checking the device limit.
// max_shared_carveout: ask for the largest shared-memory part of the L1/shared split, for kernels
// whose resident CTAs per SM are limited by shared memory (the driver's own choice can leave a CTA
// fewer resident: 168 of 228 KB on the H100 for the attention kernel, v15 in kernels/BENCHMARKS.md).
void set_smem(const void* kernel, size_t bytes, const char* name, bool max_shared_carveout = false);

}  // namespace hipstudio::gpu

namespace hipstudio::gpu {

// Asynchronous 16-byte global -> shared copy (sm_80+); valid == false writes 16 zero bytes
// (src-size 0: nothing is read). Many can be in flight per thread, unlike load-then-store.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}
// 2^x by the SFU alone (exp2f adds a denormal-range fix-up of a compare and two multiplies around
// it); 2^-inf = +0. For softmax weights, whose relative error of ~2^-22 is far below bf16's.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// atomicAdd with acquire-release semantics at GPU scope (PTX memory model): the writes ordered
// before it (in this thread, or in its CTA through a preceding barrier) become visible to a thread
// that reads the counter's later value, and that thread sees the others' writes ordered before theirs.
__device__ __forceinline__ unsigned atomic_add_acq_rel_gpu(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// Starts moving the 128-byte line at p toward this SM's L1 without waiting for it.
__device__ __forceinline__ void prefetch_l1(const void* p) { asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p)); }
// The same toward the L2 only (no L1 line, no register held).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 b16 matrices from shared memory: thread t gets M_j[t/4][2(t%4)..+1] in r[j]; threads
// 8j..8j+7 give the row addresses of matrix j.
__device__ __forceinline__ void ldmatrix_x4(uint32_t* r, const void* smem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// Four 8x8 b16 matrices from shared memory, transposed: thread t gets M_j[2(t%4)..+1][t/4] in r[j];
// threads 8j..8j+7 give the row addresses of matrix j.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t* r, const void* smem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

}  // namespace hipstudio::gpu
