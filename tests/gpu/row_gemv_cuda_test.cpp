// The decode step's matrix-vector kernel (kernels/cuda/row_gemv.h, label gpu): one table of cases
// (plain, silu_mul, residual, the fused RMSNorm with and without its residual add; f32, bf16, f16; odd row counts, short rows, strided rows and the five
// projections of an 8B Llama) against a float64 evaluation on the CPU of the same rounded inputs;
// project() and the layer's MLP on CUDA against their LibTorch form; a chain of projections that let
// the next start early against the plain chain; and, printed for the log, the
// weight-read bandwidth of each 8B shape next to at::mv's (cuBLAS gemv) and a device copy's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "engine/model/layer_math.h"
#include "tests/gpu/require_cuda_kernels.h"

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/row_gemv.h"
#endif

namespace hipstudio {
namespace {

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS

gpu::ElementType kernel_dtype(at::ScalarType t) {
  return t == at::kBFloat16 ? gpu::ElementType::kBF16 : t == at::kHalf ? gpu::ElementType::kF16 : gpu::ElementType::kF32;
}

// Half a unit in the last place, relative: the most that rounding the float32 result once to the
// dtype moves it (bf16 keeps 8 significant bits, f16 11, f32 24).
double half_ulp(at::ScalarType t) { return t == at::kBFloat16 ? 0x1p-8 : t == at::kHalf ? 0x1p-11 : 0x1p-24; }

struct GemvCase {
  const char* name;
  int64_t n, in;
  at::ScalarType dtype;
  bool silu_mul, residual;
  int64_t stride_pad = 0;  // weight rows in + stride_pad elements apart (a view of a wider matrix)
  int norm = 0;            // 1: the product uses rms_norm(x); 2: rms_norm(x + norm_residual)
};

struct GemvInputs {
  at::Tensor w, x, residual;  // on the GPU; w may be a row-strided view
  at::Tensor norm_weight, norm_residual, norm_sum;  // the fused norm's (norm_sum written by the kernel)
  double eps = 1e-5;
};

GemvInputs make_inputs(const GemvCase& c) {
  const auto f32 = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  GemvInputs in;
  // Weights at the scale of a trained layer's (~1/sqrt(in)), so that y stays O(1) at every width.
  in.w = at::randn({c.n, c.in + c.stride_pad}, f32).mul(1.0 / std::sqrt(static_cast<double>(c.in)))
             .to(c.dtype).narrow(1, 0, c.in);
  in.x = at::randn({c.silu_mul ? 2 * c.in : c.in}, f32).mul(c.silu_mul ? 2.0 : 1.0).to(c.dtype);
  if (c.residual) in.residual = at::randn({c.n}, f32).to(c.dtype);
  if (c.norm > 0) {
    // A residual stream's scale (norms of a few units an element) and a trained norm's weights.
    in.x = in.x.to(at::kFloat).mul(3.0).to(c.dtype);
    in.norm_weight = at::rand({c.in}, f32).add(0.5);
  }
  if (c.norm == 2) {
    in.norm_residual = at::randn({c.in}, f32).to(c.dtype);
    in.norm_sum = at::full({c.in}, 7.0, f32).to(c.dtype);  // not what the kernel writes
  }
  return in;
}

at::Tensor run_kernel(const GemvInputs& in, bool silu_mul) {
  const at::Tensor y = at::empty({in.w.size(0)}, in.x.options());
  gpu::RowGemvLaunch l;
  l.w = in.w.data_ptr();
  l.x = in.x.data_ptr();
  l.residual = in.residual.defined() ? in.residual.data_ptr() : nullptr;
  l.y = y.data_ptr();
  l.dtype = kernel_dtype(in.w.scalar_type());
  l.n = in.w.size(0);
  l.in = in.w.size(1);
  l.w_stride = in.w.stride(0);
  l.silu_mul = silu_mul;
  if (in.norm_weight.defined()) {
    l.norm_weight = in.norm_weight.data_ptr<float>();
    l.eps = in.eps;
    if (in.norm_residual.defined()) {
      l.norm_residual = in.norm_residual.data_ptr();
      l.norm_sum = in.norm_sum.data_ptr();
    }
  }
  gpu::row_gemv(l);  // legacy default stream, which is LibTorch's current stream here
  return y;
}

// What the fused norm feeds the product, in float64 from the same rounded inputs: the sum rounded
// to the dtype, x * rsqrt(mean of squares + eps) * weight rounded to the dtype (row_norm.h's form).
at::Tensor normed_reference(const GemvInputs& in, at::Tensor* sum) {
  at::Tensor v = in.x.cpu().to(at::kDouble);
  if (in.norm_residual.defined()) v = (v + in.norm_residual.cpu().to(at::kDouble)).to(in.x.scalar_type()).to(at::kDouble);
  if (sum) *sum = v;
  const at::Tensor scale = at::rsqrt(v.pow(2).mean() + in.eps);
  return (v * scale * in.norm_weight.cpu().to(at::kDouble)).to(in.x.scalar_type()).to(at::kDouble);
}

// The rows checked against float64: all of them, or for the big shapes 512 random ones and the last.
at::Tensor checked_rows(int64_t n) {
  if (n <= 4096) return at::arange(n, at::kLong);
  return at::cat({at::randint(n, {512}, at::kLong), at::full({1}, n - 1, at::kLong)});
}

TEST(RowGemvCuda, MatchesFloat64ReferenceOverCaseTable) {
  REQUIRE_CUDA_KERNELS();
  at::manual_seed(11);
  const std::vector<GemvCase> cases = {
      {"plain", 1000, 4096, at::kBFloat16, false, false},
      {"plain", 1000, 4096, at::kHalf, false, false},
      {"plain", 1000, 4096, at::kFloat, false, false},
      {"residual", 1000, 4096, at::kBFloat16, false, true},
      {"silu_mul", 1000, 2048, at::kBFloat16, true, false},
      {"silu_mul+residual", 1000, 14336, at::kBFloat16, true, true},
      {"silu_mul+residual", 1000, 14336, at::kHalf, true, true},
      {"silu_mul+residual", 999, 1024, at::kFloat, true, true},
      {"one row, in 8", 1, 8, at::kBFloat16, false, false},
      {"in 264 (33 chunks)", 17, 264, at::kBFloat16, false, true},
      {"in 4104", 33, 4104, at::kHalf, true, false},
      {"in 296 (74 f32 chunks)", 5, 296, at::kFloat, false, false},
      {"strided rows", 100, 4096, at::kBFloat16, false, true, 64},
      {"8B qkv", 6144, 4096, at::kBFloat16, false, false},
      {"8B wo", 4096, 4096, at::kBFloat16, false, true},
      {"8B gate+up", 28672, 4096, at::kBFloat16, false, false},
      {"8B down", 4096, 14336, at::kBFloat16, true, true},
      {"8B lm head", 128256, 4096, at::kBFloat16, false, false},
      {"norm", 1000, 4096, at::kBFloat16, false, false, 0, 1},
      {"norm", 1000, 4096, at::kHalf, false, false, 0, 1},
      {"norm", 999, 1024, at::kFloat, false, false, 0, 1},
      {"add+norm", 1000, 4096, at::kBFloat16, false, false, 0, 2},
      {"add+norm", 17, 264, at::kHalf, false, false, 0, 2},
      {"add+norm", 5, 296, at::kFloat, false, false, 0, 2},
      {"norm strided rows", 100, 4096, at::kBFloat16, false, false, 64, 1},
      {"8B qkv after the norm", 6144, 4096, at::kBFloat16, false, false, 0, 1},
      {"8B gate+up after add+norm", 28672, 4096, at::kBFloat16, false, false, 0, 2},
      // The pair layout (in < n < 2 in: q/k/v-like) in every form it takes, odd row counts included.
      {"pair layout, residual", 1501, 1024, at::kBFloat16, false, true},
      {"pair layout, add+norm", 1501, 1024, at::kHalf, false, false, 0, 2},
      {"pair layout, norm, strided rows", 700, 512, at::kFloat, false, false, 64, 1},
      // The wide layout (silu_mul: one block an SM) with fewer rows than a block's warps.
      {"wide layout, 3 rows", 3, 2048, at::kBFloat16, true, true},
      // 192 chunks a row: the L2 prefetch of the second batch (chunks 128-255) stops at the row's end.
      {"wide layout, prefetch past the row", 77, 1536, at::kBFloat16, true, true},
  };
  for (const GemvCase& c : cases) {
    const std::string label = std::string(c.name) + " " + std::to_string(c.n) + "x" + std::to_string(c.in) + " " +
                              c10::toString(c.dtype);
    const GemvInputs in = make_inputs(c);
    const at::Tensor y = run_kernel(in, c.silu_mul);
    ASSERT_EQ(y.scalar_type(), c.dtype) << label;

    const at::Tensor rows = checked_rows(c.n);
    const at::Tensor w = in.w.index_select(0, rows.cuda()).cpu().to(at::kDouble);
    at::Tensor x = in.x.cpu().to(at::kDouble);
    if (c.silu_mul) x = at::silu(x.narrow(0, 0, c.in)) * x.narrow(0, c.in, c.in);
    if (c.norm > 0) {
      at::Tensor sum;
      x = normed_reference(in, &sum);
      // The sum of two values of the dtype is exact in float32 here, so its one rounding matches.
      if (c.norm == 2) {
        EXPECT_TRUE(in.norm_sum.cpu().to(at::kDouble).equal(sum)) << label << ": norm_sum";
      }
    }
    at::Tensor ref = at::mv(w, x);
    at::Tensor scale = at::mv(w.abs(), x.abs());  // sum of |w_i x_i|: what float32 summation errors scale with
    if (c.residual) {
      const at::Tensor r = in.residual.cpu().to(at::kDouble).index_select(0, rows);
      ref = ref + r;
      scale = scale + r.abs();
    }
    const at::Tensor got = y.cpu().to(at::kDouble).index_select(0, rows);
    // Allowed: the one rounding to the dtype, plus float32 summation (~sqrt(terms) x 2^-24 of the
    // scale in practice; 1e-5 leaves a wide margin yet is far below a dropped or doubled chunk).
    const at::Tensor allowed = ref.abs() * half_ulp(c.dtype) + scale * 1e-5 + 1e-30;
    const at::Tensor err = (got - ref).abs();
    const double worst = (err / allowed).max().item<double>();
    const double rel = (err.max() / ref.abs().max()).item<double>();
    std::printf("[gpu] row_gemv %-40s max error %.3g of the allowed (%.3g of max |y|)\n", label.c_str(), worst, rel);
    EXPECT_LE(worst, 1.0) << label;
  }
}

// The layout rule (gpu::row_gemv_layout) at the shapes the sweeps chose it for and at the case table's
// layout cases: a changed rule shows here, not as table cases that quietly test another layout.
TEST(RowGemvCuda, LayoutRuleAtTheMeasuredShapes) {
  auto layout = [](int64_t n, int64_t in, bool silu_mul) {
    gpu::RowGemvLaunch l;
    l.n = n, l.in = in, l.silu_mul = silu_mul;
    return gpu::row_gemv_layout(l);
  };
  using gpu::RowGemvLayout;
  EXPECT_EQ(layout(6144, 4096, false), RowGemvLayout::kPair);      // 8B q/k/v
  EXPECT_EQ(layout(4096, 4096, false), RowGemvLayout::kStream);    // output
  EXPECT_EQ(layout(28672, 4096, false), RowGemvLayout::kStream);   // gate/up
  EXPECT_EQ(layout(4096, 14336, true), RowGemvLayout::kWide);      // down after SwiGLU
  EXPECT_EQ(layout(128256, 4096, false), RowGemvLayout::kStream);  // LM head
  EXPECT_EQ(layout(1501, 1024, false), RowGemvLayout::kPair);      // the table's pair cases
  EXPECT_EQ(layout(700, 512, false), RowGemvLayout::kPair);
  EXPECT_EQ(layout(3, 2048, true), RowGemvLayout::kWide);
}

TEST(RowGemvCuda, RefusesWhatItCannotRead) {
  gpu::RowGemvLaunch l;
  alignas(16) static uint16_t buf[64], out[64];
  l.w = buf, l.x = buf, l.y = out, l.dtype = gpu::ElementType::kBF16, l.n = 4, l.in = 16;
  EXPECT_STREQ(gpu::row_gemv_refusal(l), "");
  l.y = buf + 8;  // y over the second half of x: blocks would write it while others still read x
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.y = buf + 16;  // right after x: fine
  EXPECT_STREQ(gpu::row_gemv_refusal(l), "");
  l.y = out;
  l.in = 12;  // not a multiple of 8
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.in = 16, l.w_stride = 20;  // rows 40 bytes apart
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.w_stride = 0, l.x = buf + 1;  // x not 16-byte aligned
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.x = buf, l.in = gpu::kRowGemvMaxIn + 8;
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  // The fused norm: not with silu_mul or a residual add; its residual needs a separate sum.
  alignas(16) static float weight[16];
  alignas(16) static uint16_t other[16], sum[16];
  l.in = 16, l.norm_weight = weight;
  EXPECT_STREQ(gpu::row_gemv_refusal(l), "");
  l.silu_mul = true;
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.silu_mul = false, l.residual = other;
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.residual = nullptr, l.norm_residual = other;  // no sum
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.norm_sum = sum;
  EXPECT_STREQ(gpu::row_gemv_refusal(l), "");
  l.norm_sum = buf;  // the sum would overwrite x while other blocks read it
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.norm_sum = other + 8;  // half over the residual
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.norm_sum = sum, l.y = other;  // y over the residual every block reads
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.y = out;
  l.norm_weight = nullptr, l.norm_sum = sum;  // a residual without a norm
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.norm_residual = nullptr, l.norm_sum = nullptr;
  // The RoPE epilogue: n = (heads + 2 kv heads) head_dim, every pointer, no silu_mul, residual or norm
  // residual; y not needed; the rotated queries must not overlap x.
  alignas(16) static uint16_t table[64], q[16], cache[64];
  static int64_t position = 1;
  gpu::RopeCacheLaunch r;
  r.table = table, r.position = &position, r.q = q, r.keys = cache, r.values = cache + 32;
  r.n_heads = 2, r.n_kv_heads = 1, r.head_dim = 2;  // 8 rows
  l.rope = &r, l.n = 8, l.y = nullptr;
  EXPECT_STREQ(gpu::row_gemv_refusal(l), "");
  l.n = 6;
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.n = 8, l.residual = other;
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  l.residual = nullptr, r.table = nullptr;
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  r.table = table, r.q = buf + 4;  // the queries over x
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
  r.q = q, r.head_dim = 3, r.n_heads = 1, r.n_kv_heads = 1;  // 9 rows of an odd head_dim
  l.n = 9;
  EXPECT_STRNE(gpu::row_gemv_refusal(l), "");
}

// ms of one launch: the median of 20 batches of `k` launches (after 3 warm-up batches), timed by CUDA
// events. A large matmul before each batch keeps the GPU busy while the CPU enqueues the batch, so
// the host's launch overhead (larger than a 10 us gemv for at::mv) is not what is measured.
template <class Launch>
double time_launch_ms(Launch&& launch, int k) {
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor a = at::randn({8192, 8192}, opts);
  at::Tensor busy = at::empty({8192, 8192}, opts);
  gpu::EventPair events;
  std::vector<double> ms;
  for (int rep = 0; rep < 23; ++rep) {
    at::mm_out(busy, a, a);
    events.start();
    for (int i = 0; i < k; ++i) launch(i);
    const double t = events.stop_ms() / k;
    if (rep >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

TEST(RowGemvCuda, BandwidthOfDecodeShapesNextToCublas) {
  REQUIRE_CUDA_KERNELS();
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  // Copy bandwidth: bytes read plus bytes written over the time of a 1 GiB device copy.
  const at::Tensor src = at::empty({int64_t{1} << 29}, opts).fill_(1.0), dst = at::empty_like(src);
  const double copy_bytes = 2.0 * static_cast<double>(src.numel()) * 2.0;
  const double copy_gbs = copy_bytes / (time_launch_ms([&](int) { dst.copy_(src); }, 2) * 1e6);
  std::printf("[gpu] row_gemv bandwidth: device copy %.0f GB/s (read + write)\n", copy_gbs);

  struct Shape {
    const char* name;
    int64_t n, in;
    bool fused_down;  // silu_mul + residual, as the decode step runs the down projection
  };
  for (const Shape& s : {Shape{"qkv", 6144, 4096, false}, Shape{"wo", 4096, 4096, false},
                         Shape{"gate+up", 28672, 4096, false}, Shape{"down", 4096, 14336, false},
                         Shape{"down silu_mul+residual", 4096, 14336, true}, Shape{"lm head", 128256, 4096, false}}) {
    // Enough copies of the weights that they cannot stay in the 50 MB L2 between launches, as in a
    // decode step, where every layer's weights come from HBM.
    const double bytes = static_cast<double>(s.n * s.in) * 2.0;
    const int copies = static_cast<int>(std::min<double>(8.0, std::ceil(256e6 / bytes)));
    std::vector<GemvInputs> inputs;
    for (int i = 0; i < copies; ++i) {
      GemvInputs in;
      in.w = at::randn({s.n, s.in}, opts);
      in.x = at::randn({s.fused_down ? 2 * s.in : s.in}, opts);
      if (s.fused_down) in.residual = at::randn({s.n}, opts);
      inputs.push_back(in);
    }
    const double kernel_ms = time_launch_ms([&](int i) { run_kernel(inputs[static_cast<size_t>(i % copies)], s.fused_down); }, 8);
    const at::Tensor x = at::randn({s.in}, opts);
    at::Tensor y = at::empty({s.n}, opts);
    const double mv_ms = time_launch_ms([&](int i) { at::mv_out(y, inputs[static_cast<size_t>(i % copies)].w, x); }, 8);
    const double kernel_gbs = bytes / (kernel_ms * 1e6), mv_gbs = bytes / (mv_ms * 1e6);
    std::printf("[gpu] row_gemv %-24s %6lldx%-5lld bf16: kernel %.1f us %.0f GB/s (%.1f%% of copy), at::mv %.1f us "
                "%.0f GB/s (%.1f%%)\n",
                s.name, static_cast<long long>(s.n), static_cast<long long>(s.in), kernel_ms * 1e3, kernel_gbs,
                100.0 * kernel_gbs / copy_gbs, mv_ms * 1e3, mv_gbs, 100.0 * mv_gbs / copy_gbs);
    EXPECT_GT(kernel_gbs, 0.0) << s.name;
  }
}

// The decode step's chain of projections with every launch letting the next start at once
// (next_starts_early, as the engine's decode step now launches them) gives what the plain chain
// gives, bit for bit. Each projection reads the one before's output: the buffers start as NaN, so a
// launch that read its input before the kernel writing it had finished would leave NaN or other
// numbers behind.
TEST(RowGemvCuda, EarlyStartedChainMatchesThePlainChain) {
  REQUIRE_CUDA_KERNELS();
  at::manual_seed(11);
  const int64_t dim = 1024, qkv_rows = 1536, hidden = 2816, layers = 4;
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const auto f32 = opts.dtype(at::kFloat);
  auto weights = [&](int64_t n, int64_t in) { return at::randn({n, in}, f32).mul(1.0 / std::sqrt(double(in))).to(at::kBFloat16); };
  std::vector<at::Tensor> wqkv, wo, wgu, wd;
  for (int64_t l = 0; l < layers; ++l) {
    wqkv.push_back(weights(qkv_rows, dim)), wo.push_back(weights(dim, dim));
    wgu.push_back(weights(2 * hidden, dim)), wd.push_back(weights(dim, hidden));
  }
  const at::Tensor norm_w = at::rand({dim}, f32).add(0.5), h0 = at::randn({dim}, opts).mul(3);
  auto run_chain = [&](bool early) {
    // Every buffer made (and set to NaN) before the first launch, so that the chain's launches
    // follow one another on the stream with nothing between them.
    const double nan = std::nan("");
    std::vector<at::Tensor> out;  // per layer: q/k/v, output, gate/up, the residual sum, the next h
    for (int64_t l = 0; l < layers; ++l) {
      out.insert(out.end(), {at::full({qkv_rows}, nan, opts), at::full({dim}, nan, opts), at::full({2 * hidden}, nan, opts),
                             at::full({dim}, nan, opts), at::full({dim}, nan, opts)});
    }
    auto launch = [&](const at::Tensor& w, const at::Tensor& x, const at::Tensor& y) {
      gpu::RowGemvLaunch g;
      g.w = w.data_ptr(), g.x = x.data_ptr(), g.y = y.data_ptr(), g.dtype = gpu::ElementType::kBF16;
      g.n = w.size(0), g.in = w.size(1), g.next_starts_early = early;
      return g;
    };
    for (int64_t l = 0; l < layers; ++l) {
      const at::Tensor& h = l == 0 ? h0 : out[5 * (l - 1) + 4];
      const at::Tensor &qkv = out[5 * l], &o = out[5 * l + 1], &gu = out[5 * l + 2], &h2 = out[5 * l + 3];
      gpu::RowGemvLaunch a = launch(wqkv[l], h, qkv);  // q/k/v after the norm
      a.norm_weight = norm_w.data_ptr<float>();
      gpu::row_gemv(a);
      gpu::row_gemv(launch(wo[l], qkv.narrow(0, 0, dim), o));  // q's rows stand in for the attention
      gpu::RowGemvLaunch c = launch(wgu[l], o, gu);  // gate/up after the residual add and norm
      c.norm_weight = norm_w.data_ptr<float>(), c.norm_residual = h.data_ptr(), c.norm_sum = h2.data_ptr();
      gpu::row_gemv(c);
      gpu::RowGemvLaunch d = launch(wd[l], gu, out[5 * l + 4]);  // down after SwiGLU, plus the residual
      d.silu_mul = true, d.residual = h2.data_ptr();
      gpu::row_gemv(d);
    }
    return out;
  };
  const std::vector<at::Tensor> plain = run_chain(false), early = run_chain(true);
  ASSERT_EQ(plain.size(), early.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_FALSE(plain[i].isnan().any().item<bool>()) << "plain chain, output " << i;
    EXPECT_TRUE(early[i].equal(plain[i])) << "output " << i << " (layer " << i / 5 << ", part " << i % 5 << ")";
  }
}

#endif  // HIPSTUDIO_HAVE_CUDA_KERNELS

// The engine's one-row forms on CUDA against LibTorch's eager ops on the same inputs: the kernels
// round once where LibTorch rounds the activation and each projection, so they agree to a few bf16
// roundings of the outputs' scale.
double relative_gap(const at::Tensor& a, const at::Tensor& b) {
  return ((a.to(at::kDouble) - b.to(at::kDouble)).abs().max() / b.to(at::kDouble).abs().max()).item<double>();
}

TEST(RowGemvCuda, ProjectAndMlpMatchTheLibTorchForm) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(fused_rms_norm_built()) << "this CUDA build runs project() as at::mv (engine without HIPSTUDIO_TORCH_CUDA)";
  at::manual_seed(5);
  ModelConfig c;
  c.dim = 512, c.hidden_dim = 1408, c.n_heads = 8, c.n_kv_heads = 8, c.head_dim = 64, c.rms_norm_eps = 1e-5;
  for (const at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    const auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
    const double s = 1.0 / std::sqrt(static_cast<double>(c.dim));
    LayerWeights layer;
    layer.wo = at::randn({c.dim, c.q_dim()}, opts).mul(s);
    layer.mlp_norm = at::rand({c.dim}, opts.dtype(at::kFloat)).add(0.5);
    layer.w13 = at::randn({2 * c.hidden_dim, c.dim}, opts).mul(s);
    layer.w2 = at::randn({c.dim, c.hidden_dim}, opts).mul(1.0 / std::sqrt(static_cast<double>(c.hidden_dim)));
    const at::Tensor x = at::randn({1, c.dim}, opts), attended = at::randn({1, c.q_dim()}, opts);

    const double project_gap = relative_gap(project(x, layer.w13), at::mv(layer.w13, x[0]).unsqueeze(0));
    // The decode step's q/k/v: the norm fused into the projection's kernel.
    layer.wqkv = at::randn({c.q_dim() + 2 * c.kv_dim(), c.dim}, opts).mul(s);
    layer.attn_norm = at::rand({c.dim}, opts.dtype(at::kFloat)).add(0.5);
    const double qkv_gap = relative_gap(attention_qkv(c, layer, x),
                                        at::mv(layer.wqkv, rms_norm(x, layer.attn_norm, c.rms_norm_eps)[0]).unsqueeze(0));

    const at::Tensor fused = attention_output_and_mlp(c, layer, x, attended);
    const SumAndNorm h = add_rms_norm(x, at::mv(layer.wo, attended[0]).unsqueeze(0), layer.mlp_norm, c.rms_norm_eps);
    const at::Tensor gate_up = at::mv(layer.w13, h.normed[0]);
    const at::Tensor act = at::silu(gate_up.narrow(0, 0, c.hidden_dim)) * gate_up.narrow(0, c.hidden_dim, c.hidden_dim);
    const at::Tensor eager = h.sum + at::mv(layer.w2, act).unsqueeze(0);
    const double mlp_gap = relative_gap(fused, eager);
    std::printf("[gpu] row_gemv %s: project() vs at::mv %.3g, attention_qkv vs norm then at::mv %.3g, "
                "attention_output_and_mlp vs eager ops %.3g (of max |y|)\n",
                c10::toString(dtype), project_gap, qkv_gap, mlp_gap);
    EXPECT_EQ(fused.sizes(), eager.sizes());
    EXPECT_EQ(fused.scalar_type(), dtype);
    EXPECT_LE(project_gap, 1e-2) << c10::toString(dtype);
    EXPECT_LE(qkv_gap, 1e-2) << c10::toString(dtype);
    EXPECT_LE(mlp_gap, 2e-2) << c10::toString(dtype);
  }
  // f32 stays on LibTorch's gemv: the same numbers as at::mv.
  const at::Tensor w = at::randn({300, 64}, at::TensorOptions().device(at::kCUDA)), v = at::randn({1, 64}, w.options());
  EXPECT_TRUE(project(v, w).equal(at::mv(w, v[0]).unsqueeze(0)));
}

}  // namespace
}  // namespace hipstudio
