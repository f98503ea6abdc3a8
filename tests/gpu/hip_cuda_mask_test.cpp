// CUDA mask estimation against the CPU reference (label gpu): float32 inputs must give the very
// same masks (float64 scores in dot_f64's order, the reference's tie rule), on random,
// locality-structured and tie-heavy inputs; the trace must replay the reference's trace; bf16 masks
// are reported as overlap only. Outputs are poisoned before every launch.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "kernels/search_range.h"
#include "tests/gpu/hip_cuda_test_util.h"

namespace hipstudio {
namespace {

using testing_gpu::Kind;

struct MaskCase {
  const char* name;
  Kind kind;
  int64_t hq, hkv, tq, tk, d;
  hip::HipParams p;
  bool positions = false;
};

hip::HipParams params(int64_t k, int64_t bq, int64_t bk, int64_t bsq = 1, int64_t bsk = 1, int64_t sink = 0,
                      int64_t window = 0, double rho = 0.5, bool causal = true) {
  hip::HipParams p;
  p.k = k, p.b_q = bq, p.b_k = bk, p.b_sq = bsq, p.b_sk = bsk, p.sink = sink, p.window = window, p.rho = rho;
  p.causal = causal;
  return p;
}

std::vector<MaskCase> cases() {
  return {
      {"prefill_random", Kind::kRandom, 8, 2, 2048, 2048, 128, params(64, 32, 2)},
      {"prefill_locality_bsq", Kind::kLocality, 8, 2, 2048, 2048, 128, params(128, 64, 4, 2, 2, 8, 16, 0.25)},
      {"prefill_ties", Kind::kTies, 4, 4, 1024, 1024, 64, params(64, 32, 2, 1, 1, 0, 0, 0.0)},
      {"noncausal_positions_rho1", Kind::kRandom, 4, 1, 96, 1500, 48, params(32, 16, 2, 2, 1, 4, 0, 1.0, false), true},
      {"positions_causal_locality", Kind::kLocality, 4, 2, 200, 3000, 64, params(64, 32, 2, 1, 2, 2, 4, 0.5), true},
      {"decode_random", Kind::kRandom, 8, 2, 1, 6000, 128, params(256, 32, 2)},
      {"decode32_ties", Kind::kTies, 8, 4, 32, 5000, 128, params(128, 32, 2)},
      {"large_kb", Kind::kRandom, 2, 1, 256, 8192, 64, params(2048, 64, 2)},
  };
}

// Mask entries compared one by one; prints the fraction identical.
void compare_masks(const char* name, const hip::MaskResult& ref, const hip::MaskResult& got, bool require_equal) {
  ASSERT_EQ(ref.blocks.size(), got.blocks.size());
  size_t same = 0;
  for (size_t i = 0; i < ref.blocks.size(); ++i) same += ref.blocks[i] == got.blocks[i];
  size_t same_rows = 0, iters_same = 0;
  for (size_t r = 0; r < ref.counts.size(); ++r) {
    same_rows += ref.counts[r] == got.counts[r] &&
                 std::equal(ref.blocks.begin() + r * ref.kb, ref.blocks.begin() + (r + 1) * ref.kb,
                            got.blocks.begin() + r * got.kb);
    iters_same += ref.iterations[r] == got.iterations[r] && ref.branches[r] == got.branches[r];
  }
  const double frac = static_cast<double>(same) / static_cast<double>(ref.blocks.size());
  std::printf("[gpu] mask %-28s identical entries %zu / %zu (%.6f), identical (head, block) rows %zu / %zu, "
              "iterations+branches equal %zu / %zu\n",
              name, same, ref.blocks.size(), frac, same_rows, ref.counts.size(), iters_same, ref.counts.size());
  if (require_equal) {
    EXPECT_EQ(same, ref.blocks.size()) << name;
    EXPECT_EQ(iters_same, ref.counts.size()) << name;
  }
}

TEST(HipCudaMask, F32MasksIdenticalToCpuReference) {
  HIP_CUDA_REQUIRE();
  for (const MaskCase& c : cases()) {
    const uint64_t seed = testing_gpu::fresh_seed();
    SCOPED_TRACE(std::string(c.name) + " seed " + std::to_string(seed));
    const testing_gpu::HostInputs h = testing_gpu::make_inputs(c.kind, c.hq, c.hkv, c.tq, c.tk, c.d, seed, c.positions);
    const hip::MaskEstimate ref = hip::estimate_masks_reference(h.view(), c.p);
    const at::Tensor q = testing_gpu::to_device(h.q, {c.hq, c.tq, c.d}, at::kFloat);
    const at::Tensor k = testing_gpu::to_device(h.k, {c.hkv, c.tk, c.d}, at::kFloat);
    const at::Tensor pos = testing_gpu::positions_tensor(h);
    // Poisoned outputs: every entry must be overwritten with the reference's value (padding too).
    hip_torch::MaskTensors m;
    const auto i32 = q.options().dtype(at::kInt);
    m.blocks = at::full({c.hq, ref.mask.query_blocks, ref.mask.kb}, std::numeric_limits<int32_t>::min(), i32);
    m.counts = at::full({c.hq, ref.mask.query_blocks}, -7, i32);
    m.iterations = at::full({c.hq, ref.mask.query_blocks}, -7, i32);
    m.branches = at::full({c.hq, ref.mask.query_blocks}, -7, q.options().dtype(at::kLong));
    hip_torch::estimate_masks_into(m, q, k, c.p, pos);
    const hip::MaskResult got = hip_torch::to_mask_result(m, c.p, c.tq, c.tk, pos);
    EXPECT_EQ(got.counts, ref.mask.counts);
    compare_masks((std::string(c.name) + "/" + testing_gpu::kind_name(c.kind)).c_str(), ref.mask, got, true);
  }
}

// Returns the branches compared and how many were identical (range, representative, score, kept).
std::pair<size_t, size_t> expect_same_trace(const hip::MaskTrace& ref, const hip::MaskTrace& got) {
  EXPECT_EQ(got.head, ref.head);
  EXPECT_EQ(got.lo, ref.lo);
  EXPECT_EQ(got.hi, ref.hi);
  EXPECT_EQ(got.initial_begin, ref.initial_begin);
  EXPECT_EQ(got.initial_end, ref.initial_end);
  EXPECT_EQ(got.iterations.size(), ref.iterations.size());
  size_t branches = 0, same = 0;
  for (size_t it = 0; it < std::min(ref.iterations.size(), got.iterations.size()); ++it) {
    const auto& a = ref.iterations[it].branches;
    const auto& b = got.iterations[it].branches;
    EXPECT_EQ(a.size(), b.size()) << "iteration " << it;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i, ++branches)
      same += a[i].begin == b[i].begin && a[i].end == b[i].end && a[i].repr == b[i].repr && a[i].score == b[i].score &&
              a[i].kept == b[i].kept;
  }
  EXPECT_EQ(same, branches);
  EXPECT_EQ(got.blocks, ref.blocks);
  return {branches, same};
}

TEST(HipCudaMask, TraceReplaysCpuTrace) {
  HIP_CUDA_REQUIRE();
  for (const MaskCase& c : {cases()[1], cases()[2], cases()[5]}) {
    const uint64_t seed = testing_gpu::fresh_seed();
    SCOPED_TRACE(std::string(c.name) + " seed " + std::to_string(seed));
    const testing_gpu::HostInputs h = testing_gpu::make_inputs(c.kind, c.hq, c.hkv, c.tq, c.tk, c.d, seed, c.positions);
    const int64_t qbs = hip::query_blocks(h.view(), c.p);
    const int64_t head = c.hq - 1, qb = qbs - 1;
    const hip::MaskTrace ref = hip::trace_block_mask(h.view(), c.p, head, qb);
    const at::Tensor q = testing_gpu::to_device(h.q, {c.hq, c.tq, c.d}, at::kFloat);
    const at::Tensor k = testing_gpu::to_device(h.k, {c.hkv, c.tk, c.d}, at::kFloat);
    const auto [m, got] = hip_torch::estimate_masks_traced(q, k, c.p, head, qb, testing_gpu::positions_tensor(h));
    const auto [branches, same] = expect_same_trace(ref, got);
    std::printf("[gpu] trace %-28s %zu iterations, %zu / %zu branches identical (range, repr, score, kept)\n", c.name,
                ref.iterations.size(), same, branches);
  }
}

// The decode recorder's one launch for every head: each head's trace is the CPU's trace of that head.
TEST(HipCudaMask, EveryHeadTraceReplaysEachCpuTrace) {
  HIP_CUDA_REQUIRE();
  for (const MaskCase& c : {cases()[1], cases()[2], cases()[5]}) {
    const uint64_t seed = testing_gpu::fresh_seed();
    SCOPED_TRACE(std::string(c.name) + " seed " + std::to_string(seed));
    const testing_gpu::HostInputs h = testing_gpu::make_inputs(c.kind, c.hq, c.hkv, c.tq, c.tk, c.d, seed, c.positions);
    const int64_t qb = hip::query_blocks(h.view(), c.p) - 1;
    const at::Tensor q = testing_gpu::to_device(h.q, {c.hq, c.tq, c.d}, at::kFloat);
    const at::Tensor k = testing_gpu::to_device(h.k, {c.hkv, c.tk, c.d}, at::kFloat);
    const auto [m, got] = hip_torch::estimate_masks_traced_every_head(q, k, c.p, qb, testing_gpu::positions_tensor(h));
    ASSERT_EQ(static_cast<int64_t>(got.size()), c.hq);
    size_t branches = 0, same = 0, searched = 0;
    for (int64_t head = 0; head < c.hq; ++head) {
      const hip::MaskTrace ref = hip::trace_block_mask(h.view(), c.p, head, qb);
      const auto [b, s] = expect_same_trace(ref, got[static_cast<size_t>(head)]);
      branches += b, same += s, searched += !ref.iterations.empty();
    }
    EXPECT_GT(searched, 0u) << "no head searched: the case does not exercise the trace";
    std::printf("[gpu] every-head trace %-19s %lld heads (%zu searched), %zu / %zu branches identical\n", c.name,
                static_cast<long long>(c.hq), searched, same, branches);
  }
}

// bf16 tensor-core scores are not the reference's float64 scores: report how close the masks are.
TEST(HipCudaMask, Bf16MasksOverlapReference) {
  HIP_CUDA_REQUIRE();
  for (const MaskCase& c : {cases()[0], cases()[1], cases()[5]}) {
    const uint64_t seed = testing_gpu::fresh_seed();
    testing_gpu::HostInputs h = testing_gpu::make_inputs(c.kind, c.hq, c.hkv, c.tq, c.tk, c.d, seed, c.positions);
    testing_gpu::round_to(h.q, at::kBFloat16);
    testing_gpu::round_to(h.k, at::kBFloat16);
    const hip::MaskEstimate ref = hip::estimate_masks_reference(h.view(), c.p);
    const at::Tensor q = testing_gpu::to_device(h.q, {c.hq, c.tq, c.d}, at::kBFloat16);
    const at::Tensor k = testing_gpu::to_device(h.k, {c.hkv, c.tk, c.d}, at::kBFloat16);
    const hip::MaskResult got = hip_torch::to_mask_result(hip_torch::estimate_masks(q, k, c.p), c.p, c.tq, c.tk);
    EXPECT_EQ(got.counts, ref.mask.counts);
    // Set overlap per (head, block): selections are sets of blocks.
    double overlap = 0;
    for (size_t r = 0; r < ref.mask.counts.size(); ++r) {
      const int n = ref.mask.counts[r];
      std::vector<int32_t> a(ref.mask.blocks.begin() + r * ref.mask.kb, ref.mask.blocks.begin() + r * ref.mask.kb + n);
      std::vector<int32_t> b(got.blocks.begin() + r * got.kb, got.blocks.begin() + r * got.kb + n);
      std::vector<int32_t> both;
      std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
      overlap += n ? static_cast<double>(both.size()) / n : 1.0;
    }
    overlap /= static_cast<double>(ref.mask.counts.size());
    std::printf("[gpu] bf16 mask %-23s mean set overlap with the float64 reference on the same bf16 inputs: %.4f\n",
                c.name, overlap);
    EXPECT_GT(overlap, 0.8) << c.name;
  }
}

// Integer inputs in {-1, 0, 1}: every bf16 product and float32 sum is exact, so the tensor-core path
// must give the reference's masks exactly, ties included (sampled keys per branch 1, 2 and 8; Kb up
// to 512, the warp search's largest).
TEST(HipCudaMask, Bf16TieHeavyIntegerInputsGiveIdenticalMasks) {
  HIP_CUDA_REQUIRE();
  const MaskCase cs[] = {
      {"bf16_ties_kpr2", Kind::kTies, 8, 2, 1024, 1024, 128, params(64, 32, 2)},
      {"bf16_ties_kpr1_bsq", Kind::kTies, 4, 2, 700, 700, 64, params(64, 64, 2, 2, 2, 4, 8)},
      {"bf16_ties_kpr8_rho0", Kind::kTies, 4, 1, 900, 900, 64, params(128, 32, 8, 1, 1, 0, 0, 0.0)},
      {"bf16_ties_decode", Kind::kTies, 8, 2, 1, 6000, 128, params(256, 32, 2)},
      // Kb 512: the warp search's 16 nodes a lane (prefill with 32 sampled rows, and decode).
      {"bf16_ties_kb512_bsq2", Kind::kTies, 4, 1, 4096, 4096, 128, params(1024, 64, 2, 2)},
      {"bf16_ties_kb512_decode", Kind::kTies, 8, 2, 1, 12000, 128, params(1024, 32, 2)},
      // head_dim 256 (Gemma 2 / 3) at the paper's k 512, b_k 2 (Kb 256): a decode step and a short
      // prefill, few CTAs, whose large-chunk layout would pass the device's shared memory.
      {"bf16_ties_d256_decode", Kind::kTies, 16, 8, 1, 9000, 256, params(512, 64, 2, 2)},
      {"bf16_ties_d256_prefill", Kind::kTies, 4, 2, 128, 5000, 256, params(512, 64, 2, 2)},
  };
  for (const MaskCase& c : cs) {
    const uint64_t seed = testing_gpu::fresh_seed();
    SCOPED_TRACE(std::string(c.name) + " seed " + std::to_string(seed));
    const testing_gpu::HostInputs h = testing_gpu::make_inputs(c.kind, c.hq, c.hkv, c.tq, c.tk, c.d, seed, c.positions);
    const hip::MaskEstimate ref = hip::estimate_masks_reference(h.view(), c.p);
    const at::Tensor q = testing_gpu::to_device(h.q, {c.hq, c.tq, c.d}, at::kBFloat16);
    const at::Tensor k = testing_gpu::to_device(h.k, {c.hkv, c.tk, c.d}, at::kBFloat16);
    const hip::MaskResult got = hip_torch::to_mask_result(hip_torch::estimate_masks(q, k, c.p), c.p, c.tq, c.tk);
    EXPECT_EQ(got.counts, ref.mask.counts);
    compare_masks(c.name, ref.mask, got, true);
  }
}

TEST(HipCudaMask, BadArgumentsGiveClearErrors) {
  HIP_CUDA_REQUIRE();
  const at::Tensor q = at::randn({2, 64, 64}, at::Device(at::kCUDA, 0));
  const at::Tensor k = at::randn({1, 64, 64}, at::Device(at::kCUDA, 0));
  hip::HipParams p = params(16, 16, 2);
  EXPECT_THROW(hip_torch::estimate_masks(q.cpu(), k, p), std::invalid_argument);
  EXPECT_THROW(hip_torch::estimate_masks(q.to(at::kDouble), k.to(at::kDouble), p), std::invalid_argument);
  EXPECT_THROW(hip_torch::estimate_masks(q, at::randn({1, 64, 32}, q.options()), p), std::invalid_argument);
  p.k = 15;  // not a multiple of b_k
  try {
    hip_torch::estimate_masks(q, k, p);
    ADD_FAILURE() << "k = 15 with b_k = 2 was accepted";
  } catch (const std::exception& e) {
    std::printf("[gpu] error message: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("b_k"), std::string::npos);
  }
  p = params(4096, 16, 2);  // Kb 2048 > the kernel's limit: a clear error, no launch
  EXPECT_THROW(hip_torch::estimate_masks(q, k, p), std::exception);
}

}  // namespace
}  // namespace hipstudio
