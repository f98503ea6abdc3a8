// The forward pass's fused RMSNorm kernel (label: gpu) against a float64 evaluation of the formula:
// with and without the residual add, in float32, bf16 and f16, on row blocks with a row stride.
#include <cstdio>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/model/layer_math.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

at::Tensor reference_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor xd = x.to(at::kCPU).to(at::kDouble);
  return xd * at::rsqrt(xd.pow(2).mean(-1, true) + eps) * weight.to(at::kCPU).to(at::kDouble);
}

TEST(RowNormCuda, FusedKernelMatchesFloat64FormulaWithAndWithoutResidual) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(fused_rms_norm_built()) << "this CUDA build runs RMSNorm as LibTorch ops (engine without HIPSTUDIO_TORCH_CUDA)";
  at::manual_seed(3);
  const double eps = 1e-5;
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    const at::Tensor base = at::randn({9, 4100}, at::kFloat).mul(3).to(dtype).cuda();
    const at::Tensor x = base.narrow(1, 0, 4096);  // rows 4100 elements apart
    const at::Tensor residual = at::randn({9, 4096}, at::kFloat).to(dtype).cuda();
    const at::Tensor weight = at::rand({4096}, at::kFloat).add(0.5).cuda();
    // One rounding of the result to dtype on top of float32 arithmetic.
    const double tolerance = dtype == at::kFloat ? 1e-5 : dtype == at::kBFloat16 ? 1.6e-2 : 2e-3;

    const at::Tensor plain = rms_norm(x, weight, eps);
    const double plain_err = ((plain.to(at::kCPU).to(at::kDouble) - reference_norm(x, weight, eps)).abs() /
                              reference_norm(x, weight, eps).abs().add(1.0)).max().item<double>();

    const SumAndNorm fused = add_rms_norm(x, residual, weight, eps);
    const at::Tensor sum = x + residual;  // LibTorch's add in dtype: the sum must be bit-identical
    const double fused_err = ((fused.normed.to(at::kCPU).to(at::kDouble) - reference_norm(sum, weight, eps)).abs() /
                              reference_norm(sum, weight, eps).abs().add(1.0)).max().item<double>();
    std::printf("[gpu] fused RMSNorm %s vs float64: max relative error %.3g plain, %.3g after the residual add; sum %s\n",
                c10::toString(dtype), plain_err, fused_err, fused.sum.equal(sum) ? "identical" : "DIFFERENT");
    EXPECT_LE(plain_err, tolerance) << c10::toString(dtype);
    EXPECT_LE(fused_err, tolerance) << c10::toString(dtype);
    EXPECT_TRUE(fused.sum.equal(sum)) << c10::toString(dtype);
    EXPECT_EQ(plain.scalar_type(), dtype);
  }
}

}  // namespace
}  // namespace hipstudio
