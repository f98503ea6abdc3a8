#include "app/bench_mask_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <ATen/ATen.h>

#include "app/gpu_check.h"
#include "kernels/torch/hip_torch.h"
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/hip_cuda.h"
#endif

namespace hipstudio::app {

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
namespace {

// Median milliseconds of `fn` over `repeats` CUDA-event timings after two warm-up calls.
template <class F>
double median_ms(F&& fn, int repeats) {
  fn();
  fn();
  gpu::synchronize();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) t.push_back(gpu::time_ms(fn));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

void run_bench_mask_cuda(const hip::MaskBenchOptions& o) {
  require_cuda_kernels("bench mask --device cuda", "--device cpu");
  const hip::HipParams& p = o.params;
  const auto f32 = at::TensorOptions().device(at::Device(at::kCUDA, 0)).dtype(at::kFloat);
  std::printf("bench mask: CUDA kernels on %s, one head, Gaussian Q/K, d %lld, float32; k %lld, b_q %lld, b_k %lld, "
              "b_sq %lld, b_sk %lld, rho %.2f\n",
              gpu::device_name().c_str(), static_cast<long long>(o.dim), static_cast<long long>(p.k),
              static_cast<long long>(p.b_q), static_cast<long long>(p.b_k), static_cast<long long>(p.b_sq),
              static_cast<long long>(p.b_sk), p.rho);
  std::printf("times: median of %d CUDA-event timings; dense = every causal score of Q K^T, float32 matrix products over "
              "chunks of query rows against their causal keys\n",
              o.single_repeats);
  std::printf("%7s %10s %12s %10s\n", "T", "mask (ms)", "dense (ms)", "mask/dense");
  for (int64_t T : o.tokens) {
    at::manual_seed(static_cast<uint64_t>(o.seed));
    const at::Tensor q = at::randn({1, T, o.dim}, f32), k = at::randn({1, T, o.dim}, f32);
    hip_torch::MaskTensors m = hip_torch::estimate_masks(q, k, p);
    const double mask = median_ms([&] { hip_torch::estimate_masks_into(m, q, k, p); }, o.single_repeats);
    // Dense: every causal score, Q K^T in chunks of query rows against their causal prefix of keys
    // (a chunk's scores stay within 1 GiB; the T x T matrix would not fit at large T).
    const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 28) / T, 1, 4096);
    const double dense = median_ms(
        [&] {
          for (int64_t lo = 0; lo < T; lo += chunk) {
            const int64_t rows = std::min(chunk, T - lo);
            (void)at::matmul(q.narrow(1, lo, rows), k.narrow(1, 0, lo + rows).transpose(1, 2));
          }
        },
        o.single_repeats);
    std::printf("%7lld %10.3f %12.3f %10.4f\n", static_cast<long long>(T), mask, dense, mask / dense);
    std::fflush(stdout);
  }
}
#else
void run_bench_mask_cuda(const hip::MaskBenchOptions&) { require_cuda_kernels("bench mask --device cuda", "--device cpu"); }
#endif

}  // namespace hipstudio::app
