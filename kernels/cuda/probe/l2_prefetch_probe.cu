// L2 prefetch probe: does a latency-bound kernel (HiP's cached-step attention: ~10 us of dependent
// gathers, the HBM mostly idle) that sends the next projection's weights toward the L2 make that
// projection faster, and by more than the prefetch slows the latency-bound kernel itself?
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. kernels/cuda/probe/l2_prefetch_probe.cu kernels/cuda/row_gemv.cu
//        kernels/cuda/runtime.cu -o /tmp/l2p && /tmp/l2p
// The stand-in: 288 CTAs of 128 threads (the attention's decode grid at 128k, batch 1), each thread
// chasing `steps` dependent 16-byte loads through a 1 GiB buffer. The projection: the 4096 x 4096
// output projection (row_gemv), on 8 rotating weight copies (268 MB, beyond the L2). Each number is
// the median of 15 replays of a graph of 8 (stand-in, projection) pairs, microseconds a pair.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/probe/graph_timing.cuh"
#include "kernels/cuda/row_gemv.h"

namespace {

__device__ unsigned long long umin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }

// How the stand-in sends [pf, pf + pf_bytes) toward the L2 before its chase: 0 not at all, 1 one
// bulk prefetch a CTA (its share), 2 one prefetch.global.L2 a line spread over all threads, 3 the
// CTA's share as 32 bulk prefetches by warp 0's lanes.
__global__ void standin_kernel(const uint4* buf, unsigned items, int steps, const char* pf, unsigned long long pf_bytes,
                               int mode, uint4* sink) {
  if (mode == 1 || mode == 3) {
    const unsigned long long share = (pf_bytes / gridDim.x + 15) / 16 * 16;
    const unsigned long long begin = share * blockIdx.x;
    const unsigned long long end = umin(pf_bytes, begin + share);
    if (begin < end) {
      const int parts = mode == 1 ? 1 : 32;
      if (threadIdx.x < parts) {
        const unsigned long long piece = ((end - begin) / parts + 15) / 16 * 16;
        const unsigned long long b = begin + piece * threadIdx.x;
        const unsigned long long e = umin(end, b + piece);
        if (b < e) {
          asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(pf + b), "r"(static_cast<unsigned>(e - b))
                       : "memory");
        }
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
    l.w = w[i % copies], l.x = x, l.y = y, l.dtype = hipstudio::gpu::DType::kBF16, l.n = dim, l.in = dim, l.stream = s;
    hipstudio::gpu::row_gemv(l);
  };
  auto standin = [&](int i, int steps, int mode) {
    standin_kernel<<<288, 128, 0, s>>>(buf, items, steps, static_cast<const char*>(w[i % copies]), wbytes, mode, sink);
    HIP_CUDA_CHECK(cudaGetLastError());
  };
  std::printf("output projection alone: %.2f us\n", graph_us(s, 8, gemv));
  for (int steps : {4, 8, 16}) {
    for (int mode : {0, 1, 2, 3}) {
      const double alone = graph_us(s, 8, [&](int i) { standin(i, steps, mode); });
      const double pair = graph_us(s, 8, [&](int i) {
        standin(i, steps, mode);
        gemv(i);
      });
      std::printf("steps %2d mode %d: stand-in alone %6.2f us, stand-in + projection %6.2f us (projection %+.2f)\n",
                  steps, mode, alone, pair, pair - alone);
    }
  }
  return 0;
}
