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
    c.rope.theta = 500000.0;
    hip::HipParams p;
    p.k = dc.k, p.b_q = 64, p.b_k = dc.b_k, p.sink = dc.sink, p.window = dc.window;
    const RopeTables rope = make_rope_tables(c.rope, c.head_dim, dc.capacity, opts);
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

}  // namespace
}  // namespace hipstudio
