// dot_f64's order for every pair of rows by its CUDA kernel (kernels/cuda/dot_f64_pairs.h), label
// gpu: bit for bit the tensor ops' on CUDA and on the CPU (kernels/methods/torch/
// tensor_fixed_order.h), and so the float64 reference's, over head dims that fill the eight lanes
// unevenly (13, 64, 128), row counts that leave the kernel's last row group part full, and key
// counts past one block of keys. A timing prints vslash's step-1 shape at 128k tokens.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "kernels/dot_f64.h"
#include "kernels/methods/torch/tensor_fixed_order.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio::hip {
namespace {

TEST(DotF64PairsCuda, KernelEqualsTheTensorOpsAndTheReferenceBitForBit) {
  REQUIRE_CUDA_KERNELS();
  struct Shape {
    int64_t rows, keys, d;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{5, 300, 13}, Shape{64, 1000, 64}, Shape{67, 2049, 128}, Shape{256, 4096, 128}}) {
    at::manual_seed(11);
    // float32 values in float64, as the selection methods widen q and k.
    const at::Tensor rows = at::randn({s.rows, s.d}).to(at::kDouble), keys = at::randn({s.keys, s.d}).to(at::kDouble);
    const at::Tensor by_kernel = methods::dot_f64_pairs(rows.cuda(), keys.cuda()).cpu();
    const at::Tensor by_ops_cuda = methods::dot_f64_pairs_by_tensor_ops(rows.cuda(), keys.cuda()).cpu();
    const at::Tensor by_ops_cpu = methods::dot_f64_pairs(rows, keys);
    const std::string what = std::to_string(s.rows) + " x " + std::to_string(s.keys) + ", d " + std::to_string(s.d);
    EXPECT_TRUE(at::equal(by_kernel, by_ops_cuda)) << what;
    EXPECT_TRUE(at::equal(by_kernel, by_ops_cpu)) << what;
    // A few entries against dot_f64 itself (float32 inputs).
    const at::Tensor rf = rows.to(at::kFloat).contiguous(), kf = keys.to(at::kFloat).contiguous();
    for (int64_t i : {int64_t{0}, s.rows - 1})
      for (int64_t j : {int64_t{0}, s.keys / 2, s.keys - 1})
        EXPECT_EQ(by_kernel[i][j].item<double>(), dot_f64(rf[i].data_ptr<float>(), kf[j].data_ptr<float>(), s.d)) << what;
    std::printf("[gpu] dot_f64 pairs %s: kernel %s the tensor ops' bits\n", what.c_str(),
                at::equal(by_kernel, by_ops_cuda) ? "equals" : "DIFFERS FROM");
  }
}

// vslash's steps 1-3 at 128k tokens: a query head's last 64 rows against its KV head's 131072 keys,
// d 128; the kernel against the tensor ops. Printed, not asserted.
TEST(DotF64PairsCuda, TimingAtVslashs128kShape) {
  REQUIRE_CUDA_KERNELS();
  const at::Tensor rows = at::randn({64, 128}).to(at::kDouble).cuda(), keys = at::randn({131072, 128}).to(at::kDouble).cuda();
  auto time = [&](const std::function<at::Tensor()>& f) {
    f();
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) f();
    torch::cuda::synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 3;
  };
  const double kernel = time([&] { return methods::dot_f64_pairs(rows, keys); });
  const double ops = time([&] { return methods::dot_f64_pairs_by_tensor_ops(rows, keys); });
  std::printf("[gpu] dot_f64 pairs, 64 rows x 131072 keys, d 128: kernel %.3f ms, tensor ops %.3f ms\n", kernel, ops);
}

}  // namespace
}  // namespace hipstudio::hip
