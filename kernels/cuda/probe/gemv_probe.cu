// Matrix-vector bandwidth probe: how fast row_gemv (kernels/cuda/row_gemv.cu) reads a Llama-3.1-8B
// decode step's weights, replayed from a CUDA graph as the decode step runs it (so no launch gaps
// but the kernel's own ramp and tail), next to a device copy. For sweeping the kernel's
// compile-time knobs of its stream layout (HIPSTUDIO_GEMV_WARPS / ROWS / UNROLL; the pair and wide
// layouts are fixed) on the GPU machine, one binary each:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. -DHIPSTUDIO_GEMV_ROWS=1 kernels/cuda/probe/gemv_probe.cu
//        kernels/cuda/row_gemv.cu kernels/cuda/runtime.cu -o /tmp/gemv_probe && /tmp/gemv_probe
// (built with the kernels as build*/hipstudio_gemv_probe with the default knobs).
// Prints the device's copy and read-only bandwidth, then one line per shape: microseconds per call
// and GB/s of weights (median of 15 replays of a graph of 8 calls on rotating weight copies that
// together exceed the L2), against both.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/probe/timing.cuh"
#include "kernels/cuda/row_gemv.h"

namespace {

using hipstudio::gpu::RowGemvLaunch;
namespace probe = hipstudio::probe;

// The read-only floor: every SM streams a buffer with 8 independent 16-byte loads a lane in flight,
// nothing written but a sink no run reaches. What a decode step's weight reads could approach.
__global__ void read_floor_kernel(const uint4* p, size_t n16, unsigned* sink) {
  unsigned acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += 8 * stride) {
    uint4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const size_t j = i + u * stride;
      v[u] = j < n16 ? __ldcs(p + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) acc ^= v[u].x ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

}  // namespace

int main() {
  cudaStream_t s;
  HIP_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t copy_bytes = size_t{1} << 30;
  void *src, *dst;
  HIP_CUDA_CHECK(cudaMalloc(&src, copy_bytes));
  HIP_CUDA_CHECK(cudaMalloc(&dst, copy_bytes));
  HIP_CUDA_CHECK(cudaMemset(src, 1, copy_bytes));
  const double copy_ms = probe::graph_replay_ms(s, 2, [&](int) { HIP_CUDA_CHECK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, s)); }) / 2;
  const double copy_gbs = 2.0 * static_cast<double>(copy_bytes) / (copy_ms * 1e6);
  std::printf("device copy %.0f GB/s (read + write)\n", copy_gbs);
  double read_gbs = 0;  // the best of three grids
  {
    int sms = 0;
    HIP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    unsigned* sink = nullptr;
    HIP_CUDA_CHECK(cudaMalloc(&sink, 4));
    for (int per_sm : {2, 4, 8}) {
      const double read_ms = probe::graph_replay_ms(s, 2, [&](int) {
        read_floor_kernel<<<sms * per_sm, 256, 0, s>>>(static_cast<const uint4*>(src), copy_bytes / 16, sink);
      }) / 2;
      const double gbs = static_cast<double>(copy_bytes) / (read_ms * 1e6);
      std::printf("device read floor (%d blocks of 256 an SM): %.0f GB/s\n", per_sm, gbs);
      read_gbs = std::max(read_gbs, gbs);
    }
    HIP_CUDA_CHECK(cudaFree(sink));
  }
  HIP_CUDA_CHECK(cudaFree(src));
  HIP_CUDA_CHECK(cudaFree(dst));

  struct Shape {
    const char* name;
    int64_t n, in;
    bool fused;
  };
  double total_us = 0, total_bytes = 0;
  for (const Shape& sh : {Shape{"qkv", 6144, 4096, false}, Shape{"wo", 4096, 4096, false}, Shape{"gate+up", 28672, 4096, false},
                          Shape{"down silu_mul+residual", 4096, 14336, true}, Shape{"lm head", 128256, 4096, false}}) {
    const size_t wbytes = static_cast<size_t>(sh.n * sh.in) * 2;
    const int copies = static_cast<int>(std::max<size_t>(1, std::min<size_t>(8, (size_t{256} << 20) / wbytes + 1)));
    std::vector<void*> w(copies);
    for (auto& p : w) {
      HIP_CUDA_CHECK(cudaMalloc(&p, wbytes));
      HIP_CUDA_CHECK(cudaMemset(p, 0x3c, wbytes));  // bf16 ~0.011 everywhere: finite sums
    }
    void *x, *y, *res;
    HIP_CUDA_CHECK(cudaMalloc(&x, static_cast<size_t>(sh.in) * 4));
    HIP_CUDA_CHECK(cudaMemset(x, 0x3c, static_cast<size_t>(sh.in) * 4));
    HIP_CUDA_CHECK(cudaMalloc(&y, static_cast<size_t>(sh.n) * 2));
    HIP_CUDA_CHECK(cudaMalloc(&res, static_cast<size_t>(sh.n) * 2));
    HIP_CUDA_CHECK(cudaMemset(res, 0, static_cast<size_t>(sh.n) * 2));
    const int calls = 8;
    const double ms = probe::graph_replay_ms(s, calls, [&](int i) {
      RowGemvLaunch l;
      l.w = w[static_cast<size_t>(i % copies)], l.x = x, l.y = y, l.dtype = hipstudio::gpu::ElementType::kBF16;
      l.n = sh.n, l.in = sh.in, l.silu_mul = sh.fused, l.residual = sh.fused ? res : nullptr;
      l.stream = s;
      hipstudio::gpu::row_gemv(l);
    }) / calls;
    const double gbs = static_cast<double>(wbytes) / (ms * 1e6);
    std::printf("%-24s %6lldx%-5lld %8.1f us %6.0f GB/s (%.1f%% of copy, %.1f%% of the read floor)\n", sh.name,
                static_cast<long long>(sh.n), static_cast<long long>(sh.in), ms * 1e3, gbs, 100.0 * gbs / copy_gbs,
                100.0 * gbs / read_gbs);
    if (std::string(sh.name) != "lm head") total_us += ms * 1e3, total_bytes += static_cast<double>(wbytes);
    for (void* p : w) HIP_CUDA_CHECK(cudaFree(p));
    HIP_CUDA_CHECK(cudaFree(x));
    HIP_CUDA_CHECK(cudaFree(y));
    HIP_CUDA_CHECK(cudaFree(res));
  }
  std::printf("one layer's four projections: %.1f us, %.0f GB/s\n", total_us, total_bytes / (total_us * 1e3));

  // The decode step's chain as the engine launches it (engine/model/layer_math.cpp), 8 layers of
  // distinct weights in one graph: q/k/v after the RMSNorm, the output projection, gate/up after
  // the residual add and RMSNorm, down after SwiGLU plus the residual. Each launch depends on the
  // one before, so this shows what the kernels' ramps and tails cost between projections.
  {
    const int layers = 8;
    const int64_t dim = 4096, qkv = 6144, ffn = 14336;
    const size_t layer_bytes = static_cast<size_t>(qkv * dim + dim * dim + 2 * ffn * dim + dim * ffn) * 2;
    std::vector<void*> wq(layers), wo(layers), wgu(layers), wd(layers);
    auto alloc = [](size_t bytes, int fill) {
      void* p = nullptr;
      HIP_CUDA_CHECK(cudaMalloc(&p, bytes));
      HIP_CUDA_CHECK(cudaMemset(p, fill, bytes));
      return p;
    };
    for (int l = 0; l < layers; ++l) {
      wq[l] = alloc(static_cast<size_t>(qkv * dim) * 2, 0x3c), wo[l] = alloc(static_cast<size_t>(dim * dim) * 2, 0x3c);
      wgu[l] = alloc(static_cast<size_t>(2 * ffn * dim) * 2, 0x3c), wd[l] = alloc(static_cast<size_t>(dim * ffn) * 2, 0x3c);
    }
    std::vector<void*> h(layers + 1);
    for (auto& p : h) p = alloc(static_cast<size_t>(dim) * 2, 0x3c);
    void* q_out = alloc(static_cast<size_t>(qkv) * 2, 0);
    void* attn = alloc(static_cast<size_t>(dim) * 2, 0x3c);
    void* o = alloc(static_cast<size_t>(dim) * 2, 0);
    void* h2 = alloc(static_cast<size_t>(dim) * 2, 0);
    void* gu = alloc(static_cast<size_t>(2 * ffn) * 2, 0);
    float* norm_w = static_cast<float*>(alloc(static_cast<size_t>(dim) * 4, 0));
    // Plainly, and with every projection letting the next start at once (the engine's decode step).
    for (const bool early : {false, true}) {
      const double ms = probe::graph_replay_ms(s, 1, [&](int) {
        for (int l = 0; l < layers; ++l) {
          auto base = [&] {
            RowGemvLaunch g;
            g.dtype = hipstudio::gpu::ElementType::kBF16, g.stream = s, g.next_starts_early = early;
            return g;
          };
          RowGemvLaunch a = base();  // q/k/v after the norm
          a.w = wq[l], a.x = h[l], a.y = q_out, a.n = qkv, a.in = dim, a.norm_weight = norm_w;
          hipstudio::gpu::row_gemv(a);
          RowGemvLaunch b = base();  // output projection
          b.w = wo[l], b.x = attn, b.y = o, b.n = dim, b.in = dim;
          hipstudio::gpu::row_gemv(b);
          RowGemvLaunch c = base();  // gate/up after the residual add and norm
          c.w = wgu[l], c.x = o, c.y = gu, c.n = 2 * ffn, c.in = dim, c.norm_weight = norm_w, c.norm_residual = h[l],
          c.norm_sum = h2;
          hipstudio::gpu::row_gemv(c);
          RowGemvLaunch d = base();  // down after SwiGLU, plus the residual
          d.w = wd[l], d.x = gu, d.y = h[l + 1], d.n = dim, d.in = ffn, d.silu_mul = true, d.residual = h2;
          hipstudio::gpu::row_gemv(d);
        }
      });
      const double chain_gbs = static_cast<double>(layer_bytes) * layers / (ms * 1e6);
      std::printf("decode chain (q/k/v norm, output, gate+up add+norm, down silu+residual)%s, %d layers in a graph: "
                  "%.1f us a layer, %.0f GB/s (%.1f%% of the read floor)\n",
                  early ? ", each starting the next early" : "", layers, ms * 1e3 / layers, chain_gbs,
                  100.0 * chain_gbs / read_gbs);
    }
  }
  return 0;
}
