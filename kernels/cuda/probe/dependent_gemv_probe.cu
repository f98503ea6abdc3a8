// Dependent-projection probe: can the output projection's blocks start (programmatic dependent
// launch) while HiP's cached-step attention still runs, and load their first weights meanwhile?
// The attention kernel holds 288 CTAs of 128 threads at 168 registers and ~73 KB of shared memory
// (128k, batch 1): two or three a multiprocessor, so a 512-thread projection block (64 registers
// a thread, 32k registers) fits beside none of them, a 256-thread one beside two.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. [-DHIPSTUDIO_GEMV_WARPS=8 -DHIPSTUDIO_GEMV_ROWS=2
//        -DHIPSTUDIO_GEMV_UNROLL=4] kernels/cuda/probe/dependent_gemv_probe.cu kernels/cuda/row_gemv.cu
//        kernels/cuda/runtime.cu -o /tmp/dgp && /tmp/dgp
// (the -D knobs set the stream layout, which the 4096 x 4096 projection takes). The stand-in for the
// attention: that footprint, each thread chasing `steps` dependent 16-byte loads through 1 GiB, and
// letting the next grid start at its beginning (mode 1) or not (mode 0). Microseconds a (stand-in,
// projection) pair: median of 15 replays of a graph of 8 pairs on rotating weight copies.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/probe/graph_timing.cuh"
#include "kernels/cuda/row_gemv.h"

namespace {

constexpr int kHeld = 140;  // values each thread keeps live through the chase (registers)

__global__ void __launch_bounds__(128, 3)
    standin_kernel(const uint4* buf, unsigned items, int steps, int trigger, float* sink) {
  extern __shared__ float smem[];
  if (trigger) hipstudio::gpu::let_next_grid_start();
  unsigned idx = (blockIdx.x * 2654435761u + threadIdx.x * 40503u) % items;
  float held[kHeld];
#pragma unroll
  for (int i = 0; i < kHeld; ++i) {
    held[i] = __uint_as_float((idx * (i + 1u)) ^ blockIdx.x);
    asm volatile("" : "+f"(held[i]));  // opaque: kept in a register, not recomputed at the end
  }
  unsigned acc = 0;
  for (int s = 0; s < steps; ++s) {
    const uint4 v = __ldcg(buf + idx);
    acc ^= v.x;
    idx = (idx * 1664525u + 1013904223u + (v.x & 1u)) % items;
  }
  float total = static_cast<float>(acc);
#pragma unroll
  for (int i = 0; i < kHeld; ++i) total = total * 0.999f + held[i];
  smem[threadIdx.x] = total;
  __syncthreads();
  if (smem[(threadIdx.x + 1) % 128] == 1234.5f) sink[0] = total;
}

// Microseconds a call: the median replay of a graph of `calls` launches, over calls.
template <class F>
double graph_us(cudaStream_t s, int calls, F launch) {
  return 1e3 * hipstudio::probe::graph_replay_ms(s, calls, launch) / calls;
}

}  // namespace

int main() {
  cudaStream_t s;
  HIP_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const unsigned items = (1u << 30) / 16;
  uint4* buf = nullptr;
  float* sink = nullptr;
  HIP_CUDA_CHECK(cudaMalloc(&buf, size_t{items} * 16));
  HIP_CUDA_CHECK(cudaMemset(buf, 0x5a, size_t{items} * 16));
  HIP_CUDA_CHECK(cudaMalloc(&sink, 16));
  const size_t smem = 73 * 1024;
  HIP_CUDA_CHECK(cudaFuncSetAttribute(standin_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  HIP_CUDA_CHECK(cudaFuncSetAttribute(standin_kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  cudaFuncAttributes attr;
  HIP_CUDA_CHECK(cudaFuncGetAttributes(&attr, standin_kernel));
  int per_sm = 0;
  HIP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, standin_kernel, 128, smem));
  std::printf("stand-in: %d registers, %zu B shared, %d CTAs an SM\n", attr.numRegs, smem, per_sm);
  const int64_t dim = 4096;
  const size_t wbytes = static_cast<size_t>(dim * dim) * 2;
  const int copies = 8;
  std::vector<void*> w(copies);
  for (auto& p : w) {
    HIP_CUDA_CHECK(cudaMalloc(&p, wbytes));
    HIP_CUDA_CHECK(cudaMemset(p, 0x3c, wbytes));
  }
  void *x, *y, *res;
  HIP_CUDA_CHECK(cudaMalloc(&x, dim * 2));
  HIP_CUDA_CHECK(cudaMemset(x, 0x3c, dim * 2));
  HIP_CUDA_CHECK(cudaMalloc(&y, dim * 2));
  HIP_CUDA_CHECK(cudaMalloc(&res, dim * 2));
  HIP_CUDA_CHECK(cudaMemset(res, 0, dim * 2));
  auto gemv = [&](int i) {
    hipstudio::gpu::RowGemvLaunch l;
    l.w = w[i % copies], l.x = x, l.y = y, l.dtype = hipstudio::gpu::DType::kBF16, l.n = dim, l.in = dim, l.stream = s;
    hipstudio::gpu::row_gemv(l);
  };
  auto standin = [&](int steps, int trigger) {
    standin_kernel<<<288, 128, smem, s>>>(buf, items, steps, trigger, sink);
    HIP_CUDA_CHECK(cudaGetLastError());
  };
  for (int round = 0; round < 2; ++round) {
    std::printf("projection alone: %.2f us\n", graph_us(s, 8, gemv));
    for (int steps : {2, 6}) {
      const double alone = graph_us(s, 8, [&](int) { standin(steps, 0); });
      for (int trigger : {0, 1}) {
        const double pair = graph_us(s, 8, [&](int i) {
          standin(steps, trigger);
          gemv(i);
        });
        std::printf("steps %d trigger %d: stand-in alone %6.2f us, pair %6.2f us (projection %+.2f)\n", steps, trigger,
                    alone, pair, pair - alone);
      }
    }
  }
  return 0;
}
