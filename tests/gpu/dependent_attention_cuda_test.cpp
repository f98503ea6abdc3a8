// HiP's cached decode attention launched as a programmatic dependent of the RoPE and cache-write
// kernel (AttentionLaunch::mask_before_prior_kernel, label gpu): it copies the keys before the
// query's position while that kernel still runs, and the new key after it. Against the same launch
// made plainly after the same write: bit-equal outputs, so the split copy leaves no row of a tile
// unwritten or written twice, for CTAs of one and of two tiles, with sink and window. The cache row
// the write fills starts out holding other values whose attention differs (checked), so a new key
// read before the write would show; but the test cannot force that race: a version that copied the
// new key before the wait passed too on the H100 (the RoPE kernel, a few blocks, ends before the
// attention's first copies are issued). The race is excluded by the split's rule, not by timing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "engine/model/layer_math.h"
#include "engine/model/rope.h"
#include "kernels/hip_params.h"
#include "kernels/torch/hip_torch.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

struct DecodeCase {
  const char* name;
  int64_t heads, kv_heads, head_dim, capacity, position;
  int64_t k, b_k, sink, window;
};

TEST(HipCudaAttention, DependentDecodeLaunchEqualsThePlainOne) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(fused_rms_norm_built()) << "this CUDA build runs RoPE as LibTorch ops (engine without HIPSTUDIO_TORCH_CUDA)";
  at::manual_seed(11);
  const std::vector<DecodeCase> cases = {
      // 64 heads and k 1024 in blocks of 4: about 18 tiles a head over 9 splits (on 132 SMs), so CTAs
      // of two tiles.
      {"two-tile CTAs", 64, 8, 128, 16384, 12000, 1024, 4, 0, 0},
      // One tile a CTA (the 8B decode's shape), the query in the cache's last row. (With window 0 the
      // query's own key is in the dense tail only when its position + 1 is not a multiple of b_k:
      // otherwise the tail is empty and the key counts only if the search picks its block.)
      {"one-tile CTAs, last row", 8, 2, 128, 4095, 4094, 256, 2, 0, 0},
      {"sink and window, d 64", 8, 2, 64, 512, 200, 64, 4, 4, 16},
  };
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  for (const DecodeCase& dc : cases) {
    ModelConfig c;
    c.n_heads = dc.heads, c.n_kv_heads = dc.kv_heads, c.head_dim = dc.head_dim, c.dim = dc.heads * dc.head_dim;
    c.rope_theta = 500000.0;
    hip::HipParams p;
    p.k = dc.k, p.b_q = 64, p.b_k = dc.b_k, p.sink = dc.sink, p.window = dc.window;
    const RopeTables rope = make_rope_tables(c, dc.capacity, opts);
    const at::Tensor qkv = at::randn({1, c.q_dim() + 2 * c.kv_dim()}, opts);
    const at::Tensor position = at::full({1}, dc.position, opts.dtype(at::kLong));
    // The cache before the step: random rows, and at the query's position values the write replaces.
    const at::Tensor keys0 = at::randn({dc.kv_heads, dc.capacity, dc.head_dim}, opts);
    const at::Tensor values0 = at::randn_like(keys0);
    keys0.select(1, dc.position).fill_(3.0);
    values0.select(1, dc.position).fill_(-5.0);

    // The step's query and cache as the write leaves them, and a mask searched over that cache.
    at::Tensor keys = keys0.clone(), values = values0.clone();
    const at::Tensor q = rotate_and_cache_row(c, qkv, rope.table, position, keys, values);
    const hip_torch::MaskTensors mask =
        hip_torch::estimate_masks(q, keys.narrow(1, 0, dc.position + 1), p, position);
    const at::Tensor stale = hip_torch::sparse_attention(q, keys0, values0, mask.blocks, mask.counts, p, position);

    // The write, then the attention on one stream (LibTorch's default stream, the legacy default
    // stream the launch takes for a null stream): the launch plainly and as a dependent.
    std::vector<at::Tensor> outs;
    for (const bool dependent : {false, true}) {
      keys = keys0.clone(), values = values0.clone();
      const at::Tensor out = at::full(q.sizes(), std::nan(""), opts);
      const at::Tensor workspace =
          hip_torch::sparse_attention_workspace(q, keys, values, mask.blocks, mask.counts, p, position, out);
      const at::Tensor fresh_q = rotate_and_cache_row(c, qkv, rope.table, position, keys, values);
      hip_torch::sparse_attention_on_stream(fresh_q, keys, values, mask.blocks, mask.counts, p, position, out, workspace,
                                            /*stream=*/nullptr, dependent);
      outs.push_back(out.cpu());  // synchronizes
    }
    const bool equal = at::equal(outs[0], outs[1]);
    const double from_stale = (outs[0].to(at::kFloat) - stale.cpu().to(at::kFloat)).abs().max().item<double>();
    std::printf("[gpu] dependent decode attention, %-24s: %s the plain launch; the stale row's attention %.3g away\n",
                dc.name, equal ? "bit-equal to" : "DIFFERENT from", from_stale);
    EXPECT_TRUE(outs[0].isfinite().all().item<bool>()) << dc.name;
    EXPECT_TRUE(equal) << dc.name;
    EXPECT_GT(from_stale, 0.0) << dc.name << ": the new key does not change the output, so the test could not fail";
  }
}

// The cached decode attention with the layer's RoPE and cache write folded in (hip_torch::FoldedRope,
// AttentionLaunch::rope_table: a decode graph's cached steps run no RoPE kernel before it) against
// the RoPE kernel followed by the plain launch, on the same raw q/k/v row, mask and cache: bit-equal
// outputs, and the cache left bit-equal (the fold writes the position's key and value itself), in a
// plain launch and as a programmatic dependent, for CTAs of one and of two tiles, sink and window,
// bf16 and f16. The cache's row at the position starts out holding other values (3 and -5) whose
// attention differs, so a fold that read the new key from the cache instead of rotating it would show.
TEST(HipCudaAttention, FoldedRopeLaunchEqualsTheRopeKernelThenTheAttention) {
  REQUIRE_CUDA_KERNELS();
  ASSERT_TRUE(fused_rms_norm_built()) << "this CUDA build runs RoPE as LibTorch ops (engine without HIPSTUDIO_TORCH_CUDA)";
  at::manual_seed(12);
  struct FoldCase {
    DecodeCase shape;
    at::ScalarType dtype;
  };
  const std::vector<FoldCase> cases = {
      {{"two-tile CTAs", 64, 8, 128, 16384, 12000, 1024, 4, 0, 0}, at::kBFloat16},
      {{"one-tile CTAs, last row", 32, 8, 128, 4095, 4094, 512, 2, 0, 0}, at::kBFloat16},
      {{"sink and window, d 64", 8, 2, 64, 512, 200, 64, 4, 4, 16}, at::kHalf},
  };
  for (const FoldCase& fc : cases) {
    const DecodeCase& dc = fc.shape;
    const auto opts = at::TensorOptions().device(at::kCUDA).dtype(fc.dtype);
    ModelConfig c;
    c.n_heads = dc.heads, c.n_kv_heads = dc.kv_heads, c.head_dim = dc.head_dim, c.dim = dc.heads * dc.head_dim;
    c.rope_theta = 500000.0;
    hip::HipParams p;
    p.k = dc.k, p.b_q = 64, p.b_k = dc.b_k, p.sink = dc.sink, p.window = dc.window;
    const RopeTables rope = make_rope_tables(c, dc.capacity, opts);
    const at::Tensor qkv = at::randn({1, c.q_dim() + 2 * c.kv_dim()}, opts);
    const at::Tensor position = at::full({1}, dc.position, opts.dtype(at::kLong));
    const at::Tensor keys0 = at::randn({dc.kv_heads, dc.capacity, dc.head_dim}, opts);
    const at::Tensor values0 = at::randn_like(keys0);
    keys0.select(1, dc.position).fill_(3.0);
    values0.select(1, dc.position).fill_(-5.0);

    // The reference: the RoPE kernel's write, then the plain launch over a mask of that cache.
    at::Tensor ref_keys = keys0.clone(), ref_values = values0.clone();
    const at::Tensor q = rotate_and_cache_row(c, qkv, rope.table, position, ref_keys, ref_values);
    const hip_torch::MaskTensors mask = hip_torch::estimate_masks(q, ref_keys.narrow(1, 0, dc.position + 1), p, position);
    const at::Tensor ref_out = at::full(q.sizes(), std::nan(""), opts);
    const at::Tensor workspace =
        hip_torch::sparse_attention_workspace(q, ref_keys, ref_values, mask.blocks, mask.counts, p, position, ref_out);
    hip_torch::sparse_attention_on_stream(q, ref_keys, ref_values, mask.blocks, mask.counts, p, position, ref_out,
                                          workspace, nullptr, false);
    const at::Tensor stale = hip_torch::sparse_attention(q, keys0, values0, mask.blocks, mask.counts, p, position);
    ASSERT_TRUE(hip_torch::rope_fold_supported(q, ref_keys, p)) << dc.name;

    const at::Tensor raw_q = qkv.narrow(1, 0, c.q_dim()).view({c.n_heads, 1, c.head_dim});
    for (const bool dependent : {false, true}) {
      const at::Tensor keys = keys0.clone(), values = values0.clone();
      const at::Tensor out = at::full(q.sizes(), std::nan(""), opts);
      hip_torch::sparse_attention_on_stream(raw_q, keys, values, mask.blocks, mask.counts, p, position, out, workspace,
                                            nullptr, dependent, hip_torch::FoldedRope{qkv, rope.table});
      const bool out_equal = at::equal(out.cpu(), ref_out.cpu());
      const bool cache_equal = at::equal(keys, ref_keys) && at::equal(values, ref_values);
      const double from_stale = (ref_out.to(at::kFloat) - stale.to(at::kFloat)).abs().max().item<double>();
      std::printf("[gpu] folded RoPE decode attention, %-24s %s, %s: output %s, cache %s the RoPE kernel's; the stale "
                  "row's attention %.3g away\n",
                  dc.name, c10::toString(fc.dtype), dependent ? "dependent" : "plain    ",
                  out_equal ? "bit-equal to" : "DIFFERENT from", cache_equal ? "bit-equal to" : "DIFFERENT from",
                  from_stale);
      EXPECT_TRUE(ref_out.isfinite().all().item<bool>()) << dc.name;
      EXPECT_TRUE(out_equal) << dc.name << (dependent ? " dependent" : " plain");
      EXPECT_TRUE(cache_equal) << dc.name << (dependent ? " dependent" : " plain");
      EXPECT_GT(from_stale, 0.0) << dc.name << ": the new key does not change the output, so the test could not fail";
    }
  }
}

// A folded RoPE the launch cannot take is refused before anything runs, naming what is wrong: a
// query that is not the start of its q/k/v row, and a float32 launch (the SIMT kernel).
TEST(HipCudaAttention, FoldedRopeRefusesWhatTheKernelCannotTake) {
  REQUIRE_CUDA_KERNELS();
  hip::HipParams p;
  p.k = 64, p.b_q = 64, p.b_k = 4;
  for (const at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    const auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
    ModelConfig c;
    c.n_heads = 8, c.n_kv_heads = 2, c.head_dim = 64, c.dim = 512, c.rope_theta = 10000.0;
    const RopeTables rope = make_rope_tables(c, 512, opts);
    const at::Tensor qkv = at::randn({1, c.q_dim() + 2 * c.kv_dim()}, opts);
    const at::Tensor keys = at::randn({2, 512, 64}, opts), values = at::randn_like(keys);
    const at::Tensor position = at::full({1}, 300, opts.dtype(at::kLong));
    const at::Tensor raw_q = qkv.narrow(1, 0, c.q_dim()).view({c.n_heads, 1, c.head_dim});
    const hip_torch::MaskTensors mask = hip_torch::estimate_masks(raw_q, keys.narrow(1, 0, 301), p, position);
    const at::Tensor out = at::empty(raw_q.sizes(), opts);
    const at::Tensor workspace =
        hip_torch::sparse_attention_workspace(raw_q, keys, values, mask.blocks, mask.counts, p, position, out);
    auto refusal = [&](const at::Tensor& q) -> std::string {
      try {
        hip_torch::sparse_attention_on_stream(q, keys, values, mask.blocks, mask.counts, p, position, out, workspace,
                                              nullptr, false, hip_torch::FoldedRope{qkv, rope.table});
      } catch (const std::exception& e) {
        return e.what();
      }
      return "";
    };
    const at::Tensor elsewhere = at::randn(raw_q.sizes(), opts);
    EXPECT_NE(refusal(elsewhere).find("folded RoPE"), std::string::npos) << c10::toString(dtype);
    if (dtype == at::kFloat) {
      EXPECT_NE(refusal(raw_q).find("bf16 or f16"), std::string::npos);
      EXPECT_FALSE(hip_torch::rope_fold_supported(raw_q, keys, p));
    } else {
      EXPECT_EQ(refusal(raw_q), "");
      EXPECT_TRUE(hip_torch::rope_fold_supported(raw_q, keys, p));
    }
  }
}

}  // namespace
}  // namespace hipstudio
