// The oracle's block-max kernel (kernels/cuda/oracle_block_scores.h), label gpu: every entry a query
// block's causal range reaches equals a float64 brute force over the same bf16/f16 values (the
// maximum over the block's sampled rows and the key block's keys of q . k), within float32
// summation, for both of its kernels (the shared-memory reduction, and the register reduction where
// 32 divides a block's sampled rows and d is 64 or 128). The shapes cover query blocks that straddle
// the row tiles (b_q / b_sq not dividing 128, and b_q = b_sq = 1), key blocks that straddle the 64-key
// steps and the 32-key warp windows (b_k 3, 5), rows
// past the prompt in the last query block, rows that start after earlier keys, both element types,
// and a key range long enough that the launch splits it across CTAs; a timing prints the 8B
// model's 128k shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/gpu/require_cuda_kernels.h"

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/oracle_block_scores.h"
#endif

namespace hipstudio {
namespace {

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
struct Shape {
  std::string name;
  int64_t heads, d, rows, first, b_q, b_sq, b_k;
  bool bf16 = true;
};

// Random inputs of a shape on the device, and the kernel's launch over them.
struct Prepared {
  at::Tensor q, k, out;  // q (heads, rows, d), k (keys, d), out (heads, nq, key_blocks) float32
  gpu::OracleBlockScoresLaunch launch;
  int64_t keys = 0, nq = 0, key_blocks = 0;
};

Prepared prepare(const Shape& s, uint64_t seed) {
  at::manual_seed(static_cast<int64_t>(seed));
  Prepared r;
  r.keys = s.first + s.rows;
  r.nq = (s.rows + s.b_q - 1) / s.b_q;
  r.key_blocks = (r.keys + s.b_k - 1) / s.b_k;
  const auto type = s.bf16 ? at::kBFloat16 : at::kHalf;
  r.q = at::randn({s.heads, s.rows, s.d}).to(type).cuda();
  r.k = at::randn({r.keys, s.d}).to(type).cuda();
  r.out = at::empty({s.heads, r.nq, r.key_blocks}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
  gpu::OracleBlockScoresLaunch& l = r.launch;
  l.q = r.q.data_ptr(), l.k = r.k.data_ptr();
  l.q_head_stride = r.q.stride(0), l.q_row_stride = r.q.stride(1), l.k_row_stride = r.k.stride(0);
  l.bf16 = s.bf16;
  l.out = r.out.data_ptr<float>();
  l.heads = s.heads, l.d = s.d, l.rows = s.rows, l.keys = r.keys, l.key_blocks = r.key_blocks, l.nq = r.nq;
  l.first_position = s.first;
  l.b_q = s.b_q, l.b_sq = s.b_sq, l.b_k = s.b_k;
  return r;
}

// The caller's -inf fill, then the kernel (on the default stream, as LibTorch's ops here).
void run(Prepared& r) {
  r.out.fill_(-std::numeric_limits<float>::infinity());
  gpu::oracle_block_scores(r.launch);
}

TEST(OracleBlockScoresCuda, EveryReachedEntryIsTheFloat64BlockMax) {
  REQUIRE_CUDA_KERNELS();
  // name, heads, d, rows, first position, b_q, b_sq, b_k[, bf16]
  const std::vector<Shape> shapes = {
      {"model_settings", 4, 128, 1000, 0, 64, 2, 2},
      {"blocks_straddle_row_tiles_and_steps", 3, 64, 700, 0, 48, 1, 3},
      {"later_rows_bk5", 2, 128, 300, 2000, 32, 4, 5},
      {"one_row_blocks_f16", 2, 16, 300, 0, 1, 1, 1, false},
      {"long_key_range_split", 2, 128, 256, 19744, 64, 2, 2},
      {"d256_f16", 1, 256, 200, 100, 64, 3, 4, false},
      // The register-reduction kernel (32 divides the sampled rows, d 64 or 128): padding rows,
      // later rows, key blocks across 32-key warp windows, two warps' rows in one query block, f16.
      {"warp_rows_d64_bk3_later", 3, 64, 1000, 500, 64, 2, 3},
      {"warp_rows_two_warps_a_block", 2, 128, 777, 0, 64, 1, 1},
      {"warp_rows_f16", 2, 128, 640, 64, 32, 1, 2, false},
  };
  for (const Shape& s : shapes) {
    Prepared r = prepare(s, 7);
    ASSERT_TRUE(gpu::oracle_block_scores_fits(r.launch)) << s.name;
    run(r);
    const at::Tensor got_all = r.out.cpu();
    const at::Tensor q = r.q.to(at::kDouble).cpu(), k = r.k.to(at::kDouble).cpu();
    const int64_t S = (s.b_q + s.b_sq - 1) / s.b_sq;
    const auto out = got_all.accessor<float, 3>();
    const at::Tensor scores_all = at::matmul(q, k.t());  // (heads, rows, keys) in float64
    const auto sc = scores_all.accessor<double, 3>();
    double worst = 0, largest = 0;
    int64_t checked = 0, wrong = 0;
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t j = 0; j < r.nq; ++j) {
        const int64_t visible = std::min(r.keys, s.first + (j + 1) * s.b_q);  // the block's causal range
        for (int64_t cb = 0; cb * s.b_k < visible; ++cb) {
          double want = -std::numeric_limits<double>::infinity();
          for (int64_t t = 0; t < S; ++t) {
            const int64_t row = j * s.b_q + t * s.b_sq;
            if (row >= s.rows) break;
            for (int64_t key = cb * s.b_k; key < std::min(r.keys, (cb + 1) * s.b_k); ++key) want = std::max(want, sc[h][row][key]);
          }
          const double got = out[h][j][cb];
          const double err = std::abs(got - want);
          worst = std::max(worst, err);
          largest = std::max(largest, std::abs(want));
          // Exact bf16/f16 products summed in float32: a few float32 ulps of the partial sums.
          if (!(err <= 1e-6 * static_cast<double>(s.d) * (1.0 + std::abs(want)))) ++wrong;
          ++checked;
        }
      }
    std::printf("[gpu] oracle block scores %s: %lld entries, %lld outside float32 summation, max abs diff %.3g (largest score %.3g)\n",
                s.name.c_str(), static_cast<long long>(checked), static_cast<long long>(wrong), worst, largest);
    EXPECT_EQ(wrong, 0) << s.name;
    EXPECT_GT(checked, 0) << s.name;
  }
}

// One launch of the 8B model's views at 128k tokens: a KV group's 4 heads, the last 8192 rows over
// 131072 keys (the views' largest tiles), b_q 64, b_sq 2, b_k 2. Printed, not asserted.
TEST(OracleBlockScoresCuda, TimingAtThe8BModels128kShape) {
  REQUIRE_CUDA_KERNELS();
  const Shape s{"8b_128k_tile", 4, 128, 8192, 131072 - 8192, 64, 2, 2};
  Prepared r = prepare(s, 3);
  run(r);  // warm-up (and the shared-memory attribute)
  torch::cuda::synchronize();
  const int repeats = 5;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) run(r);
  torch::cuda::synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / repeats;
  const double products = 4.0 * (8192.0 / 2) * (131072.0 - 4096) * 128;  // sampled rows x their mean visible keys x d
  std::printf("[gpu] oracle block scores at the 8B model's 128k tile: %.2f ms a launch with its -inf fill (%.0f TFLOP/s of "
              "products)\n", ms, 2 * products / (ms * 1e-3) / 1e12);
}
#else
TEST(OracleBlockScoresCuda, EveryReachedEntryIsTheFloat64BlockMax) {
  GTEST_SKIP() << "the HiP CUDA kernels were not built; run the gpu-labelled tests on a GPU machine";
}
#endif

}  // namespace
}  // namespace hipstudio
