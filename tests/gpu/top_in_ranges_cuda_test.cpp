// The ranked selection's CUDA kernel (kernels/cuda/top_in_ranges.h, through top_in_ranges), label
// gpu: its lists equal the tensor ops' and the brute-force rule's (tests/kernels/
// top_in_ranges_cases.h) entry for entry, float32 and float64, ties, -inf, signed zeros and rows
// of 70000 columns included. A timing prints the views' 128k shape, kernel against tensor ops.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>

#include <torch/cuda.h>

#include "kernels/methods/torch/tensor_top_blocks.h"
#include "tests/gpu/require_cuda_kernels.h"
#include "tests/kernels/top_in_ranges_cases.h"

namespace hipstudio::hip {
namespace {

TEST(TopInRangesCuda, KernelListsEqualTheTensorOpsAndTheBruteForce) {
  REQUIRE_CUDA_KERNELS();
  for (const testing::TopInRangesCase& c : testing::top_in_ranges_cases()) {
    for (at::ScalarType t : {at::kDouble, at::kFloat}) {
      const at::Tensor scores = c.scores.to(t);
      testing::TopInRangesCase rounded = c;  // the rule over the scores as this dtype holds them
      rounded.scores = scores.to(at::kDouble);
      const at::Tensor want = testing::top_in_ranges_brute(rounded);
      const at::Tensor by_kernel = methods::top_in_ranges(scores.cuda(), c.lo, c.hi.cuda(), c.take).cpu();
      const at::Tensor by_ops = methods::top_in_ranges_by_tensor_ops(scores.cuda(), c.lo, c.hi.cuda(), c.take).cpu();
      const std::string what = c.name + (t == at::kFloat ? " float32" : " float64");
      EXPECT_TRUE(at::equal(by_kernel, want)) << what;
      EXPECT_TRUE(at::equal(by_ops, want)) << what;
      std::printf("[gpu] top in ranges %s: kernel lists %s the brute force's\n", what.c_str(),
                  at::equal(by_kernel, want) ? "equal" : "DIFFER FROM");
    }
  }
}

// The views' oracle at 128k tokens: one tile of 4 heads x 256 query blocks over 65536 key blocks,
// kb 256, causal ranges. Printed, not asserted.
TEST(TopInRangesCuda, TimingAtTheViews128kShape) {
  REQUIRE_CUDA_KERNELS();
  const int64_t m = 256, n = 65536, take = 256;
  const at::Tensor scores = at::randn({4, m, n}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
  const at::Tensor hi = (at::arange(m, at::kLong) * (n / m) + n / m).cuda();
  auto time = [&](const std::function<at::Tensor()>& f) {
    f();
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) f();
    torch::cuda::synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 3;
  };
  const double kernel = time([&] { return methods::top_in_ranges(scores, 8, hi, take); });
  const double ops = time([&] { return methods::top_in_ranges_by_tensor_ops(scores, 8, hi, take); });
  EXPECT_TRUE(at::equal(methods::top_in_ranges(scores, 8, hi, take), methods::top_in_ranges_by_tensor_ops(scores, 8, hi, take)));
  std::printf("[gpu] top in ranges, 4 x 256 rows of 65536, take 256: kernel %.3f ms, tensor ops %.3f ms\n", kernel, ops);
}

}  // namespace
}  // namespace hipstudio::hip
