// The decode step's fused RoPE + KV-cache write (kernels/cuda/rope_cache.h through
// rotate_and_cache_row, label gpu) against its LibTorch form (rotate_qkv and two index copies) on the
// same inputs: values copied exactly, q and k within one rounding of the dtype, no other cache row
// touched; and the same RoPE in the q/k/v projection's epilogue against the projection then the kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include <ATen/ATen.h>

#include "engine/model/layer_math.h"
#include "engine/model/rope.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

double gap(const at::Tensor& a, const at::Tensor& b) {
  return ((a.to(at::kDouble) - b.to(at::kDouble)).abs().max() / b.to(at::kDouble).abs().max()).item<double>();
}

TEST(RopeCacheCuda, FusedWriteMatchesTheLibTorchForm) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(fused_rms_norm_built()) << "this CUDA build runs RoPE as LibTorch ops (engine without HIPSTUDIO_TORCH_CUDA)";
  at::manual_seed(7);
  for (const int64_t hd : {64, 128}) {
    for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
      ModelConfig c;
      c.n_heads = 8, c.n_kv_heads = 2, c.head_dim = hd, c.dim = 8 * hd, c.rope.theta = 500000.0;
      const auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
      const int64_t capacity = 100;
      const RopeTables rope = make_rope_tables(c.rope, c.head_dim, capacity, opts);
      const at::Tensor qkv = at::randn({1, c.q_dim() + 2 * c.kv_dim()}, opts);
      const at::Tensor position = at::full({1}, 37, opts.dtype(at::kLong));
      const at::Tensor keys = at::zeros({c.n_kv_heads, capacity, hd}, opts), values = at::zeros_like(keys);
      const at::Tensor q = rotate_and_cache_row(c, qkv, rope.table, position, keys, values);

      const RotatedQkv eager = rotate_qkv(c, qkv, rope.table.index_select(0, position));
      const at::Tensor eager_keys = at::zeros_like(keys).index_copy_(1, position, eager.k);
      const at::Tensor eager_values = at::zeros_like(values).index_copy_(1, position, eager.v);
      const double q_gap = gap(q, eager.q), k_gap = gap(keys, eager_keys);
      std::printf("[gpu] rope_cache head_dim %lld %s: q %.3g, k %.3g of max |x| from LibTorch's form; values %s\n",
                  static_cast<long long>(hd), c10::toString(dtype), q_gap, k_gap,
                  values.equal(eager_values) ? "identical" : "DIFFERENT");
      // One ulp of the dtype (the two forms may round the last multiply-add differently).
      const double tolerance = dtype == at::kBFloat16 ? 0x1p-7 : dtype == at::kHalf ? 0x1p-10 : 1e-6;
      EXPECT_EQ(q.sizes(), eager.q.sizes());
      EXPECT_LE(q_gap, tolerance) << hd << " " << c10::toString(dtype);
      EXPECT_LE(k_gap, tolerance) << hd << " " << c10::toString(dtype);
      EXPECT_TRUE(values.equal(eager_values)) << hd << " " << c10::toString(dtype);
      EXPECT_EQ(keys.ne(0).sum().item<int64_t>(), eager_keys.ne(0).sum().item<int64_t>()) << "rows beside the position";
    }
  }
}

// The decode step's q/k/v projection with the RoPE and cache write in its epilogue
// (rotated_qkv_cached_row: one kernel, kernels/cuda/row_gemv.h rope) gives what the projection and
// then the RoPE kernel give (attention_qkv, rotate_and_cache_row), bit for bit: q, and the whole
// caches (random beforehand, so a write beside the position shows). f32 and a q/k/v bias take the
// two-kernel form, checked the same way.
TEST(RopeCacheCuda, EpilogueInTheProjectionMatchesTheRopeKernel) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(fused_rms_norm_built()) << "this CUDA build runs RoPE as LibTorch ops (engine without HIPSTUDIO_TORCH_CUDA)";
  at::manual_seed(8);
  struct Shape {
    int64_t heads, kv_heads, hd;
  };
  for (const Shape sh : {Shape{8, 2, 128}, Shape{4, 4, 64}, Shape{6, 3, 64}}) {
    for (const at::ScalarType dtype : {at::kBFloat16, at::kHalf, at::kFloat}) {
      for (const bool bias : {false, true}) {
        ModelConfig c;
        c.n_heads = sh.heads, c.n_kv_heads = sh.kv_heads, c.head_dim = sh.hd, c.dim = 384, c.rope.theta = 500000.0;
        const auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
        const int64_t capacity = 40;
        const RopeTables rope = make_rope_tables(c.rope, c.head_dim, capacity, opts);
        LayerWeights layer;
        layer.wqkv = at::randn({c.q_dim() + 2 * c.kv_dim(), c.dim}, opts).mul(1.0 / std::sqrt(double(c.dim)));
        layer.attn_norm = at::rand({c.dim}, opts.dtype(at::kFloat)).add(0.5);
        if (bias) layer.bqkv = at::randn({c.q_dim() + 2 * c.kv_dim()}, opts);
        const at::Tensor x = at::randn({1, c.dim}, opts).mul(3);
        const at::Tensor position = at::full({1}, 29, opts.dtype(at::kLong));
        const at::Tensor keys = at::randn({c.n_kv_heads, capacity, c.head_dim}, opts), values = at::randn_like(keys);
        const at::Tensor keys2 = keys.clone(), values2 = values.clone();

        const at::Tensor q = rotated_qkv_cached_row(c, layer, x, rope.table, position, keys, values);
        const at::Tensor q2 = rotate_and_cache_row(c, attention_qkv(c, layer, x), rope.table, position, keys2, values2);
        const std::string what = std::to_string(sh.heads) + "/" + std::to_string(sh.kv_heads) + " heads, head_dim " +
                                 std::to_string(sh.hd) + ", " + c10::toString(dtype) + (bias ? ", bias" : "");
        std::printf("[gpu] q/k/v with the RoPE epilogue, %s: q %s, keys %s, values %s\n", what.c_str(),
                    q.equal(q2) ? "identical" : "DIFFERENT", keys.equal(keys2) ? "identical" : "DIFFERENT",
                    values.equal(values2) ? "identical" : "DIFFERENT");
        EXPECT_EQ(q.sizes(), q2.sizes()) << what;
        EXPECT_TRUE(q.equal(q2)) << what;
        EXPECT_TRUE(keys.equal(keys2)) << what;
        EXPECT_TRUE(values.equal(values2)) << what;
      }
    }
  }
}

}  // namespace
}  // namespace hipstudio
