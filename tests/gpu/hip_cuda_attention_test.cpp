// CUDA block-sparse attention against the CPU float64 reference (label gpu): relative L2 error
// <= 1e-5 in float32, <= 1e-2 in bf16 / f16 (inputs rounded first, so the reference sees the GPU's
// inputs), prefill and decode (split key lists), head dims 64 / 128 / 48 (padded), GQA, positions.
// Outputs are poisoned with NaN before every launch and must come back finite everywhere.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "kernels/sparse_attention_reference.h"
#include "tests/gpu/hip_cuda_test_util.h"
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/hip_cuda.h"
#endif

namespace hipstudio {
namespace {

using testing_gpu::Kind;

struct AttnCase {
  const char* name;
  int64_t hq, hkv, tq, tk, d;
  int64_t k, bq, bk, sink, window;
  bool positions = false;
  int splits = 0;
  bool causal = true;
  // Q scaled up: scores spread over many powers of two, so the running max jumps past the lazy
  // rescale's slack (kernels/cuda/sparse_attention.cu) often and O must be rescaled exactly then.
  float q_scale = 1.f;
};

std::vector<AttnCase> cases() {
  return {
      {"prefill_d128_bq32", 8, 2, 1024, 1024, 128, 128, 32, 2, 0, 0},
      {"prefill_d64_bq64_sink_window", 4, 2, 777, 777, 64, 64, 64, 4, 8, 16},
      {"prefill_d48_padded", 4, 1, 300, 300, 48, 32, 32, 2, 2, 0},
      {"prefill_bq128_rowtiles", 2, 2, 400, 400, 128, 64, 128, 2, 0, 4},
      {"positions_noncausal", 4, 2, 80, 2000, 128, 64, 16, 2, 2, 0, true, 0, false},
      {"positions_causal", 4, 2, 80, 2000, 64, 64, 32, 2, 0, 2, true},
      {"decode1_auto_split", 8, 2, 1, 5000, 128, 256, 32, 2, 0, 0},
      {"decode32_split7", 8, 2, 32, 4000, 128, 256, 32, 2, 4, 0, false, 7},
      {"decode5_split3_d64", 4, 4, 5, 3000, 64, 128, 32, 4, 0, 8, false, 3},
      {"decode1_split40_empty_splits", 8, 2, 1, 3000, 128, 128, 32, 2, 0, 0, false, 40},
      {"prefill_bq64_sharp_scores", 4, 1, 700, 700, 128, 128, 64, 2, 0, 0, false, 0, true, 12.f},
      {"decode1_split4_sharp_scores", 8, 2, 1, 3000, 128, 256, 32, 2, 0, 0, false, 4, true, 12.f},
  };
}

hip::HipParams params_of(const AttnCase& c) {
  hip::HipParams p;
  p.k = c.k, p.b_q = c.bq, p.b_k = c.bk, p.sink = c.sink, p.window = c.window, p.causal = c.causal;
  return p;
}

void run_case(const AttnCase& c, at::ScalarType st, double tol, bool gpu_mask, const char* path = "",
              const hip::ScoreTransform& score = {}) {
  const uint64_t seed = testing_gpu::fresh_seed();
  SCOPED_TRACE(std::string(c.name) + " " + std::string(c10::toString(st)) + " seed " + std::to_string(seed));
  testing_gpu::HostInputs h = testing_gpu::make_inputs(Kind::kRandom, c.hq, c.hkv, c.tq, c.tk, c.d, seed, c.positions);
  for (float& x : h.q) x *= c.q_scale;
  testing_gpu::round_to(h.q, st), testing_gpu::round_to(h.k, st), testing_gpu::round_to(h.v, st);
  const hip::HipParams p = params_of(c);
  const at::Tensor q = testing_gpu::to_device(h.q, {c.hq, c.tq, c.d}, st);
  const at::Tensor k = testing_gpu::to_device(h.k, {c.hkv, c.tk, c.d}, st);
  const at::Tensor v = testing_gpu::to_device(h.v, {c.hkv, c.tk, c.d}, st);
  const at::Tensor pos = testing_gpu::positions_tensor(h);
  hip::MaskResult mask;
  hip_torch::MaskTensors mt;
  if (gpu_mask) {  // the GPU's own mask (bit-identical for float32 inputs; bf16 ones may differ)
    mt = hip_torch::estimate_masks(q, k, p, pos);
    mask = hip_torch::to_mask_result(mt, p, c.tq, c.tk, pos);
  } else {
    mask = hip::estimate_masks_reference(h.view(), p).mask;
    mt = testing_gpu::mask_tensors_of(mask);
  }
  const hip::AttentionOutput ref = hip::sparse_attention_reference(h.view(), p, mask, 0, score);
  at::Tensor out = at::full(q.sizes(), std::nan(""), q.options());  // poison
  hip_torch::sparse_attention(q, k, v, mt.blocks, mt.counts, p, pos, c.splits, out, score);
  const bool finite = out.isfinite().all().item<bool>();
  const double err = testing_gpu::rel_l2(out, ref.out);
  std::printf("[gpu] attention %-30s %-8s %s mask%s: relative L2 %.3g (limit %.0e), all written: %s\n", c.name,
              c10::toString(st), gpu_mask ? "gpu" : "cpu", path, err, tol, finite ? "yes" : "NO");
  EXPECT_TRUE(finite);
  EXPECT_LE(err, tol);
}

TEST(HipCudaAttention, F32MatchesFloat64Reference) {
  HIP_CUDA_REQUIRE();
  for (const AttnCase& c : cases()) run_case(c, at::kFloat, 1e-5, false);
  run_case(cases()[0], at::kFloat, 1e-5, true);
}

TEST(HipCudaAttention, Bf16MatchesFloat64Reference) {
  HIP_CUDA_REQUIRE();
  for (const AttnCase& c : cases()) run_case(c, at::kBFloat16, 1e-2, false);
  run_case(cases()[0], at::kBFloat16, 1e-2, true);
}

// A soft-cap and another softmax scale (Gemma 2's attention: scale query_pre_attn_scalar^-0.5, cap
// 50; and a tight cap of 2 that flattens the sharp cases) in every kernel: SIMT float32, the
// mma.sync tensor-core kernel (prefill and split decode), against the float64 reference.
TEST(HipCudaAttention, SoftCappedScoresMatchFloat64Reference) {
  HIP_CUDA_REQUIRE();
  for (const hip::ScoreTransform score : {hip::ScoreTransform{1.0 / std::sqrt(224.0), 50.0}, hip::ScoreTransform{0.0, 2.0}}) {
    for (const AttnCase& c : cases()) {
      run_case(c, at::kFloat, 1e-5, false, ", capped", score);
      run_case(c, at::kBFloat16, 1e-2, false, ", capped", score);
    }
    run_case(cases()[0], at::kHalf, 1e-2, false, ", capped", score);
  }
}

TEST(HipCudaAttention, F16MatchesFloat64Reference) {
  HIP_CUDA_REQUIRE();
  run_case(cases()[0], at::kHalf, 1e-2, false);
  run_case(cases()[6], at::kHalf, 1e-2, false);
}

// The fused split merge counts finished splits in the binding's cached workspace and the last CTA
// resets the count: a counter left non-zero by one call would make the next call merge early
// (partials missing) or never (output left poisoned). Back-to-back calls with changing split
// counts on the one workspace must each match the reference.
TEST(HipCudaAttention, RepeatedSplitCallsReuseTheWorkspace) {
  HIP_CUDA_REQUIRE();
  AttnCase c = cases()[6];  // decode1_auto_split
  for (int splits : {5, 5, 40, 2, 5, 0}) {
    c.splits = splits;
    run_case(c, at::kBFloat16, 1e-2, false);
  }
}

TEST(HipCudaAttention, BatchedInputsMatchPerSequence) {
  HIP_CUDA_REQUIRE();
  const auto dev = at::Device(at::kCUDA, 0);
  hip::HipParams p;
  p.k = 64, p.b_q = 32, p.b_k = 2;
  const at::Tensor q = at::randn({3, 8, 1, 128}, dev).to(at::kBFloat16);
  const at::Tensor k = at::randn({3, 2, 3000, 128}, dev).to(at::kBFloat16);
  const at::Tensor v = at::randn({3, 2, 3000, 128}, dev).to(at::kBFloat16);
  const hip_torch::MaskTensors m = hip_torch::estimate_masks(q, k, p);
  const at::Tensor out = hip_torch::sparse_attention(q, k, v, m.blocks, m.counts, p);
  double worst = 0;
  for (int64_t b = 0; b < 3; ++b) {
    const hip_torch::MaskTensors mb = hip_torch::estimate_masks(q[b], k[b], p);
    EXPECT_TRUE(mb.blocks.equal(m.blocks[b]));
    const at::Tensor ob = hip_torch::sparse_attention(q[b], k[b], v[b], mb.blocks, mb.counts, p);
    worst = std::max(worst, (ob.to(at::kFloat) - out[b].to(at::kFloat)).abs().max().item<double>());
  }
  std::printf("[gpu] batched vs per-sequence decode: max abs difference %.3g\n", worst);
  EXPECT_EQ(worst, 0.0);
}

// One launch over sequences of different lengths (sparse_attention_batch: each entry's key count
// read on the device, its keys either at its batch index of a (batch, hkv, capacity, d) K/V or at
// its start in one shared (hkv, rows, d) K/V) against each sequence's own launch over exactly its
// keys, with its own mask, at the same split count: the same bits (a count ignored would place the
// query at the capacity's end and attend other keys; a start ignored would read another
// sequence's keys). f32 (SIMT), bf16 and f16 (tensor cores, unsplit and split in 3).
TEST(HipCudaAttention, PerSequenceKeyCountsMatchEachSequenceAlone) {
  HIP_CUDA_REQUIRE();
  const auto dev = at::Device(at::kCUDA, 0);
  hip::HipParams p;
  p.k = 64, p.b_q = 32, p.b_k = 2, p.sink = 4;
  const std::vector<int64_t> counts{3000, 1501, 700}, capacities{3000, 1600, 900};
  const int64_t batch = 3, hkv = 2, hq = 8, d = 128, capacity = 3000;
  for (const at::ScalarType st : {at::kFloat, at::kBFloat16, at::kHalf}) {
    const at::Tensor q = at::randn({batch, hq, 1, d}, dev).to(st);
    const at::Tensor k = at::randn({batch, hkv, capacity, d}, dev).to(st);
    const at::Tensor v = at::randn({batch, hkv, capacity, d}, dev).to(st);
    // The same keys as slots of one tensor: sequence b's rows start at the sum of the capacities before it.
    std::vector<int32_t> starts;
    std::vector<at::Tensor> k_rows, v_rows;
    int32_t row = 0;
    for (int64_t b = 0; b < batch; ++b) {
      starts.push_back(row);
      row += static_cast<int32_t>(capacities[b]);
      k_rows.push_back(k[b].narrow(1, 0, capacities[b]));
      v_rows.push_back(v[b].narrow(1, 0, capacities[b]));
    }
    const at::Tensor k_shared = at::cat(k_rows, 1), v_shared = at::cat(v_rows, 1);  // (hkv, rows, d)
    std::vector<at::Tensor> blocks, block_counts;
    for (int64_t b = 0; b < batch; ++b) {
      const hip_torch::MaskTensors m = hip_torch::estimate_masks(q[b], k[b].narrow(1, 0, counts[b]), p);
      blocks.push_back(m.blocks);
      block_counts.push_back(m.counts);
    }
    const at::Tensor all_blocks = at::stack(blocks), all_counts = at::stack(block_counts);
    const at::Tensor key_counts = at::tensor(std::vector<int32_t>(counts.begin(), counts.end()), at::kInt).to(dev);
    const at::Tensor key_starts = at::tensor(starts, at::kInt).to(dev);
    for (const int splits : {1, 3}) {
      const at::Tensor strided = hip_torch::sparse_attention_batch(q, k, v, all_blocks, all_counts, p, key_counts,
                                                                   at::Tensor(), splits);
      const at::Tensor shared = hip_torch::sparse_attention_batch(q, k_shared, v_shared, all_blocks, all_counts, p,
                                                                  key_counts, key_starts, splits);
      for (int64_t b = 0; b < batch; ++b) {
        const at::Tensor alone = hip_torch::sparse_attention(q[b], k[b].narrow(1, 0, counts[b]), v[b].narrow(1, 0, counts[b]),
                                                             blocks[b], block_counts[b], p, at::Tensor(), splits);
        EXPECT_TRUE(strided[b].equal(alone)) << c10::toString(st) << " splits " << splits << " sequence " << b;
        EXPECT_TRUE(shared[b].equal(alone)) << c10::toString(st) << " splits " << splits << " sequence " << b;
      }
    }
  }
  std::printf("[gpu] per-sequence key counts and starts: one launch equals each sequence's own, f32 / bf16 / f16\n");
}

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
// Sets an environment variable for a scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Prefill launches of 64-row CTAs without a split run the wgmma kernel on sm_90 devices and the
// mma.sync kernel elsewhere: both against the float64 reference, in bf16 and f16, on head dims
// 64, 128 and 48 (padded), partial row tiles, two row tiles a block, sink and window, positions
// and sharp scores. HIPSTUDIO_ATTN_WGMMA picks the path; the launch counter shows wgmma ran.
TEST(HipCudaAttention, WgmmaAndMmaSyncPrefillPathsMatchReference) {
  HIP_CUDA_REQUIRE();
  std::vector<AttnCase> wide;
  for (AttnCase c : cases())
    if (c.bq >= 64 && c.tq > 32) wide.push_back(c);
  wide.push_back({"prefill_d48_bq64_padded", 4, 1, 300, 300, 48, 32, 64, 2, 2, 0});
  wide.push_back({"positions_causal_bq64", 4, 2, 80, 2000, 128, 64, 64, 2, 0, 2, true});
  ASSERT_GE(wide.size(), 5u);
  for (AttnCase& c : wide) c.splits = 1;  // the wgmma kernel takes unsplit launches
  {
    ScopedEnv env("HIPSTUDIO_ATTN_WGMMA", "0");
    const int64_t before = gpu::attention_wgmma_launches();
    for (const AttnCase& c : wide)
      for (at::ScalarType st : {at::kBFloat16, at::kHalf}) run_case(c, st, 1e-2, false, ", mma.sync");
    EXPECT_EQ(gpu::attention_wgmma_launches(), before) << "HIPSTUDIO_ATTN_WGMMA=0 still ran the wgmma kernel";
  }
  ScopedEnv env("HIPSTUDIO_ATTN_WGMMA", "1");
  const int64_t before = gpu::attention_wgmma_launches();
  try {
    run_case(wide[0], at::kBFloat16, 1e-2, false, ", wgmma");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "mma.sync path checked; no wgmma path here: " << e.what();
  }
  for (const AttnCase& c : wide)
    for (at::ScalarType st : {at::kBFloat16, at::kHalf}) run_case(c, st, 1e-2, false, ", wgmma");
  const int64_t ran = gpu::attention_wgmma_launches() - before;
  std::printf("[gpu] wgmma attention launches: %lld\n", static_cast<long long>(ran));
  EXPECT_EQ(ran, static_cast<int64_t>(1 + 2 * wide.size()));
  // The soft-cap inside the wgmma kernel too.
  const hip::ScoreTransform capped{1.0 / std::sqrt(224.0), 2.0};
  for (const AttnCase& c : wide) run_case(c, at::kBFloat16, 1e-2, false, ", wgmma capped", capped);
  EXPECT_EQ(gpu::attention_wgmma_launches() - before, static_cast<int64_t>(1 + 3 * wide.size()));
}
#endif

TEST(HipCudaAttention, DenseBaselineMatchesReference) {
  HIP_CUDA_REQUIRE();
  if (!hip_torch::dense_attention_supported()) GTEST_SKIP() << "LibTorch < 2 has no scaled_dot_product_attention";
  const uint64_t seed = testing_gpu::fresh_seed();
  testing_gpu::HostInputs h = testing_gpu::make_inputs(Kind::kRandom, 4, 2, 256, 256, 128, seed);
  for (auto* x : {&h.q, &h.k, &h.v}) testing_gpu::round_to(*x, at::kBFloat16);
  hip::HipParams p;
  const hip::AttentionOutput ref = hip::dense_attention_reference(h.view(), p);
  const at::Tensor q = testing_gpu::to_device(h.q, {1, 4, 256, 128}, at::kBFloat16);
  const at::Tensor k = hip_torch::expand_kv_heads(testing_gpu::to_device(h.k, {1, 2, 256, 128}, at::kBFloat16), 4);
  const at::Tensor v = hip_torch::expand_kv_heads(testing_gpu::to_device(h.v, {1, 2, 256, 128}, at::kBFloat16), 4);
  for (auto b : {hip_torch::DenseBackend::kAuto, hip_torch::DenseBackend::kFlash, hip_torch::DenseBackend::kCuDNN}) {
    try {
      const at::Tensor out = hip_torch::dense_attention(q, k, v, true, b);
      const double err = testing_gpu::rel_l2(out, ref.out);
      std::printf("[gpu] dense baseline %-6s relative L2 %.3g\n", hip_torch::dense_backend_name(b), err);
      EXPECT_LE(err, 1e-2);
    } catch (const std::exception& e) {
      std::printf("[gpu] dense baseline %-6s unavailable: %.200s\n", hip_torch::dense_backend_name(b), e.what());
    }
  }
}

}  // namespace
}  // namespace hipstudio
