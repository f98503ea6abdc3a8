// What can run around HiP's cached-step attention (128k, batch 1: 288 CTAs of 128 threads, ~10 us
// of dependent gathers with the HBM mostly idle) to make the output projection after it start
// sooner. Two experiments, each against the same projection (row_gemv, 4096 x 4096, on 8 rotating
// weight copies: 268 MB, beyond the L2), microseconds a (stand-in, projection) pair, the median of 15
// replays of a graph of 8 pairs (kernels/BENCHMARKS_HISTORY.md: neither paid):
// 1. L2 prefetch: a stand-in with the attention's grid, each thread chasing `steps` dependent 16-byte
//    loads through 1 GiB, first sends the projection's weights toward the L2 (modes below). Does the
//    projection get faster, and by more than the prefetch slows the stand-in?
// 2. Dependent start: a stand-in with the attention's footprint too (168 registers, ~73 KB of shared
//    memory: two or three a multiprocessor, so a 512-thread projection block fits beside none of
//    them, a 256-thread one beside two) lets the next grid start at its beginning (trigger 1) or not
//    (trigger 0). Do the projection's blocks gain by loading their first weights meanwhile?
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. [-DHIPSTUDIO_GEMV_WARPS=8 -DHIPSTUDIO_GEMV_ROWS=2
//        -DHIPSTUDIO_GEMV_UNROLL=4] kernels/cuda/probe/around_attention_probe.cu kernels/cuda/row_gemv.cu
//        kernels/cuda/runtime.cu -o /tmp/aap && /tmp/aap
// (the -D knobs set row_gemv's stream layout, which the 4096 x 4096 projection takes).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/probe/timing.cuh"
#include "kernels/cuda/row_gemv.h"

namespace {

// Experiment 1: how the stand-in sends [pf, pf + pf_bytes) toward the L2 before its chase: mode 0
// not at all, 1 one bulk prefetch a CTA (its share), 2 one prefetch.global.L2 a line spread over all
// threads, 3 the CTA's share as 32 bulk prefetches by warp 0's lanes.
__global__ void prefetching_standin(const uint4* buf, unsigned items, int steps, const char* pf,
                                    unsigned long long pf_bytes, int mode, uint4* sink) {
  if (mode == 1 || mode == 3) {
    const unsigned long long share = (pf_bytes / gridDim.x + 15) / 16 * 16;
    const unsigned long long begin = share * blockIdx.x;
    const unsigned long long end = min(pf_bytes, begin + share);
    if (begin < end) {
      const int parts = mode == 1 ? 1 : 32;
      if (threadIdx.x < parts) {
        const unsigned long long piece = ((end - begin) / parts + 15) / 16 * 16;
        const unsigned long long b = begin + piece * threadIdx.x;
        const unsigned long long e = min(end, b + piece);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // the bulk prefetch is Hopper's (a no-op in sm_80 code)
        if (b < e) {
          asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(pf + b), "r"(static_cast<unsigned>(e - b))
                       : "memory");
        }
#endif
      }
    }
  } else if (mode == 2) {
    const unsigned long long lines = pf_bytes / 128;
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < lines; i += gridDim.x * blockDim.x)
      hipstudio::gpu::prefetch_l2(pf + i * 128);
  }
  unsigned idx = (blockIdx.x * 2654435761u + threadIdx.x * 40503u) % items;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int s = 0; s < steps; ++s) {
    const uint4 v = __ldcg(buf + idx);
    acc.x ^= v.x, acc.y ^= v.y;
    idx = (idx * 1664525u + 1013904223u + (v.x & 1u)) % items;
  }
  if (acc.x == 0x12345678u && acc.y == 0x9abcdef0u) sink[0] = acc;
}

// Experiment 2: the attention's footprint.
constexpr int kHeld = 140;  // values each thread keeps live through the chase (registers)

__global__ void __launch_bounds__(128, 3)
    footprint_standin(const uint4* buf, unsigned items, int steps, int trigger, float* sink) {
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

}  // namespace

int main() {
  using hipstudio::probe::graph_us_per_call;
  cudaStream_t s;
  HIP_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const unsigned items = (1u << 30) / 16;  // the chase's 1 GiB
  uint4* buf = nullptr;
  uint4* sink = nullptr;
  HIP_CUDA_CHECK(cudaMalloc(&buf, size_t{items} * 16));
  HIP_CUDA_CHECK(cudaMemset(buf, 0x5a, size_t{items} * 16));
  HIP_CUDA_CHECK(cudaMalloc(&sink, 16));
  const int64_t dim = 4096;
  const size_t wbytes = static_cast<size_t>(dim * dim) * 2;
  const int copies = 8;
  std::vector<void*> w(copies);
  for (auto& p : w) {
    HIP_CUDA_CHECK(cudaMalloc(&p, wbytes));
    HIP_CUDA_CHECK(cudaMemset(p, 0x3c, wbytes));
  }
  void *x, *y;
  HIP_CUDA_CHECK(cudaMalloc(&x, dim * 2));
  HIP_CUDA_CHECK(cudaMemset(x, 0x3c, dim * 2));
  HIP_CUDA_CHECK(cudaMalloc(&y, dim * 2));
  auto gemv = [&](int i) {
    hipstudio::gpu::RowGemvLaunch l;
    l.w = w[i % copies], l.x = x, l.y = y, l.dtype = hipstudio::gpu::ElementType::kBF16, l.n = dim, l.in = dim, l.stream = s;
    hipstudio::gpu::row_gemv(l);
  };
  // Each stand-in alone, then with the projection after it: the projection's share is the difference.
  auto pair_line = [&](const char* what, auto&& standin) {
    const double alone = graph_us_per_call(s, 8, standin);
    const double pair = graph_us_per_call(s, 8, [&](int i) {
      standin(i);
      gemv(i);
    });
    std::printf("%s: stand-in alone %6.2f us, stand-in + projection %6.2f us (projection %+.2f)\n", what, alone, pair,
                pair - alone);
  };

  std::printf("output projection alone: %.2f us\n", graph_us_per_call(s, 8, gemv));
  std::printf("1. L2 prefetch (mode 0 none, 1 bulk a CTA, 2 a line a thread, 3 32 bulk a CTA)\n");
  for (int steps : {4, 8, 16}) {
    for (int mode : {0, 1, 2, 3}) {
      char what[64];
      std::snprintf(what, sizeof what, "steps %2d mode %d", steps, mode);
      pair_line(what, [&](int i) {
        prefetching_standin<<<288, 128, 0, s>>>(buf, items, steps, static_cast<const char*>(w[i % copies]), wbytes, mode,
                                                sink);
        HIP_CUDA_CHECK(cudaGetLastError());
      });
    }
  }

  const size_t smem = 73 * 1024;
  HIP_CUDA_CHECK(cudaFuncSetAttribute(footprint_standin, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  HIP_CUDA_CHECK(cudaFuncSetAttribute(footprint_standin, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  cudaFuncAttributes attr;
  HIP_CUDA_CHECK(cudaFuncGetAttributes(&attr, footprint_standin));
  int per_sm = 0;
  HIP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, footprint_standin, 128, smem));
  std::printf("2. dependent start: stand-in of %d registers, %zu B shared, %d CTAs an SM\n", attr.numRegs, smem, per_sm);
  for (int steps : {2, 6}) {
    for (int trigger : {0, 1}) {
      char what[64];
      std::snprintf(what, sizeof what, "steps %d trigger %d", steps, trigger);
      pair_line(what, [&](int) {
        footprint_standin<<<288, 128, smem, s>>>(buf, items, steps, trigger, reinterpret_cast<float*>(sink));
        HIP_CUDA_CHECK(cudaGetLastError());
      });
    }
  }
  return 0;
}
