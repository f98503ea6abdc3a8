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
  std::printf("times: median of %d CUDA-event timings; dense = causal Q K^T as float32 matrix products over %lld query "
              "blocks of b_q rows, scaled to all T (T + 1) / 2 scores\n",
              o.single_repeats, static_cast<long long>(o.dense_blocks));
  std::printf("%7s %10s %12s %10s\n", "T", "mask (ms)", "dense (ms)*", "mask/dense");
  for (int64_t T : o.tokens) {
    at::manual_seed(static_cast<uint64_t>(o.seed));
    const at::Tensor q = at::randn({1, T, o.dim}, f32), k = at::randn({1, T, o.dim}, f32);
    hip_torch::MaskTensors m = hip_torch::estimate_masks(q, k, p);
    const double mask = median_ms([&] { hip_torch::estimate_masks_into(m, q, k, p); }, o.single_repeats);
    // Dense: rows of whole query blocks spread over T, each against its causal keys, scaled by the
    // share of the T (T + 1) / 2 scores they hold.
    const int64_t blocks = std::min<int64_t>(o.dense_blocks, (T + p.b_q - 1) / p.b_q);
    double scores = 0, ms = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t row = (T - 1) * (b + 1) / blocks;
      const int64_t lo = std::max<int64_t>(0, row - p.b_q + 1);
      const at::Tensor rows = q.narrow(1, lo, row - lo + 1), keys = k.narrow(1, 0, row + 1);
      ms += median_ms([&] { (void)at::matmul(rows, keys.transpose(1, 2)); }, o.single_repeats);
      scores += static_cast<double>(row - lo + 1) * static_cast<double>(row + 1);
    }
    const double dense = ms * (static_cast<double>(T) * static_cast<double>(T + 1) / 2.0) / std::max(scores, 1.0);
    std::printf("%7lld %10.3f %12.3f %10.4f\n", static_cast<long long>(T), mask, dense, mask / dense);
    std::fflush(stdout);
  }
  std::printf("* dense scores estimated from %lld query blocks (a full T x T product does not fit at large T)\n",
              static_cast<long long>(o.dense_blocks));
}
#else
void run_bench_mask_cuda(const hip::MaskBenchOptions&) { require_cuda_kernels("bench mask --device cuda", "--device cpu"); }
#endif

}  // namespace hipstudio::app
