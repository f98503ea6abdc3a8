// The plain C++ interface (kernels/cuda/hip_cuda.h) without LibTorch's CUDA: small cases that
// compute-sanitizer (memcheck, racecheck) runs over: --gtest_filter='HipCudaRawApi.*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/mask_reference.h"
#include "kernels/sparse_attention_reference.h"

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/hip_cuda.h"
#endif

namespace hipstudio {
namespace {

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
using gpu::DeviceBuffer;

struct Small {
  int64_t hq = 4, hkv = 2, tq = 256, tk = 256, d = 64;
  std::vector<float> q, k, v;
  hip::HipParams p;
  hip::AttentionInputs view() const {
    hip::AttentionInputs in;
    in.q = q.data(), in.k = k.data(), in.v = v.data(), in.hq = hq, in.hkv = hkv, in.tq = tq, in.tk = tk, in.d = d;
    return in;
  }
};

Small make_small(int64_t tq, bool bf16_round) {
  Small s;
  s.tq = tq;
  std::mt19937 rng(static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));  // not std::random_device (crashes beside PyTorch's LibTorch)
  std::normal_distribution<float> nd;
  auto fill = [&](std::vector<float>& x, size_t n) {
    x.resize(n);
    for (float& f : x) f = bf16_round ? gpu::bf16_to_float(gpu::float_to_bf16(nd(rng))) : nd(rng);
  };
  fill(s.q, static_cast<size_t>(s.hq * s.tq * s.d));
  fill(s.k, static_cast<size_t>(s.hkv * s.tk * s.d));
  fill(s.v, static_cast<size_t>(s.hkv * s.tk * s.d));
  s.p.k = 32, s.p.b_q = 32, s.p.b_k = 2, s.p.sink = 2, s.p.window = 4;
  return s;
}

template <class T>
std::vector<T> convert(const std::vector<float>& x, bool bf16) {
  std::vector<T> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if constexpr (sizeof(T) == 4) out[i] = x[i];
    else out[i] = bf16 ? gpu::float_to_bf16(x[i]) : gpu::float_to_f16(x[i]);
  }
  return out;
}

DeviceBuffer upload(const void* p, size_t bytes) {
  DeviceBuffer b(bytes);
  b.upload(p, bytes);
  return b;
}

gpu::Strides strides(int64_t heads, int64_t t, int64_t d) { return gpu::Strides{heads * t * d, t * d, d}; }

// An attention launch over Small's shapes: q, k, v and out on the device, the mask's blocks and
// counts uploaded (workspace and splits left to the caller).
gpu::AttentionLaunch attention_launch(const Small& s, gpu::ElementType dtype, const DeviceBuffer& q, const DeviceBuffer& k,
                                      const DeviceBuffer& v, DeviceBuffer& out, const DeviceBuffer& blocks,
                                      const DeviceBuffer& counts) {
  gpu::AttentionLaunch al;
  al.q = q.get(), al.k = k.get(), al.v = v.get(), al.out = out.get(), al.dtype = dtype;
  al.q_stride = al.out_stride = strides(s.hq, s.tq, s.d), al.k_stride = al.v_stride = strides(s.hkv, s.tk, s.d);
  al.hq = s.hq, al.hkv = s.hkv, al.tq = s.tq, al.tk = s.tk, al.d = s.d, al.hip = s.p;
  al.blocks = static_cast<const int32_t*>(blocks.get()), al.counts = static_cast<const int32_t*>(counts.get());
  return al;
}

#define RAW_REQUIRE()                                                                     \
  do {                                                                                    \
    const std::string why_ = gpu::device_status();                                        \
    if (!why_.empty()) GTEST_SKIP() << "HiP CUDA kernels not testable here: " << why_;    \
  } while (0)

// Mask (f32 exact, bf16) and attention (f32 SIMT, bf16 tensor cores, split decode) on one small case.
TEST(HipCudaRawApi, SmallCasesMatchReference) {
  RAW_REQUIRE();
  for (int64_t tq : {int64_t{256}, int64_t{3}}) {
    for (bool bf16 : {false, true}) {
      const Small s = make_small(tq, bf16);
      const hip::MaskResult ref_mask = hip::estimate_masks_reference(s.view(), s.p).mask;
      const hip::AttentionOutput ref = hip::sparse_attention_reference(s.view(), s.p, ref_mask);
      const int64_t qbs = ref_mask.query_blocks, kb = ref_mask.kb;
      const size_t el = bf16 ? 2 : 4;
      DeviceBuffer q, k, v;
      if (bf16) {
        auto qh = convert<uint16_t>(s.q, true), kh = convert<uint16_t>(s.k, true), vh = convert<uint16_t>(s.v, true);
        q = upload(qh.data(), qh.size() * 2), k = upload(kh.data(), kh.size() * 2), v = upload(vh.data(), vh.size() * 2);
      } else {
        q = upload(s.q.data(), s.q.size() * 4), k = upload(s.k.data(), s.k.size() * 4), v = upload(s.v.data(), s.v.size() * 4);
      }
      DeviceBuffer blocks(static_cast<size_t>(s.hq * qbs * kb) * 4), counts(static_cast<size_t>(s.hq * qbs) * 4);
      blocks.fill_bytes(0x7f), counts.fill_bytes(0x7f);  // poison
      gpu::MaskLaunch ml;
      ml.q = q.get(), ml.k = k.get(), ml.dtype = bf16 ? gpu::ElementType::kBF16 : gpu::ElementType::kF32;
      ml.q_stride = strides(s.hq, s.tq, s.d), ml.k_stride = strides(s.hkv, s.tk, s.d);
      ml.hq = s.hq, ml.hkv = s.hkv, ml.tq = s.tq, ml.tk = s.tk, ml.d = s.d, ml.hip = s.p;
      ml.blocks = static_cast<int32_t*>(blocks.get()), ml.counts = static_cast<int32_t*>(counts.get());
      gpu::launch_estimate_masks(ml);
      std::vector<int32_t> got_blocks(ref_mask.blocks.size()), got_counts(ref_mask.counts.size());
      blocks.download(got_blocks.data(), got_blocks.size() * 4);
      counts.download(got_counts.data(), got_counts.size() * 4);
      EXPECT_EQ(got_counts, ref_mask.counts);
      if (!bf16) {
        EXPECT_EQ(got_blocks, ref_mask.blocks);
      }
      // Attention with the reference's mask (uploaded), so both paths see the same keys.
      DeviceBuffer rb = upload(ref_mask.blocks.data(), ref_mask.blocks.size() * 4);
      DeviceBuffer rc = upload(ref_mask.counts.data(), ref_mask.counts.size() * 4);
      for (int splits : {1, 3}) {
        DeviceBuffer out(static_cast<size_t>(s.hq * s.tq * s.d) * el);
        out.fill_bytes(0xff);  // NaN in both float32 and bf16
        gpu::AttentionLaunch al = attention_launch(s, bf16 ? gpu::ElementType::kBF16 : gpu::ElementType::kF32, q, k, v, out, rb, rc);
        al.num_splits = splits;
        const int used = gpu::attention_splits(al);
        DeviceBuffer ws(std::max<size_t>(gpu::attention_workspace_bytes(al, used), 16));
        al.workspace = ws.get();
        gpu::sparse_attention(al);
        std::vector<float> got(static_cast<size_t>(s.hq * s.tq * s.d));
        if (bf16) {
          std::vector<uint16_t> raw(got.size());
          out.download(raw.data(), raw.size() * 2);
          for (size_t i = 0; i < got.size(); ++i) got[i] = gpu::bf16_to_float(raw[i]);
        } else {
          out.download(got.data(), got.size() * 4);
        }
        double num = 0, den = 0;
        bool finite = true;
        for (size_t i = 0; i < got.size(); ++i) {
          finite = finite && std::isfinite(got[i]);
          num += (got[i] - ref.out[i]) * (got[i] - ref.out[i]);
          den += ref.out[i] * ref.out[i];
        }
        const double err = std::sqrt(num / den);
        std::printf("[gpu] raw api tq %3lld %-4s splits %d (used %d): relative L2 %.3g, all written %s\n",
                    static_cast<long long>(tq), bf16 ? "bf16" : "f32", splits, used, err, finite ? "yes" : "NO");
        EXPECT_TRUE(finite);
        EXPECT_LE(err, bf16 ? 1e-2 : 1e-5);
      }
    }
  }
}

// A decode step's split merge in a thread-block cluster (AttentionLaunch::cluster_merge, sm_90)
// gives the workspace merge's bits, at the split counts a decode step takes (2-16; 10 at 32k-128k
// with k 512), and both match the float64 reference. Elsewhere both launches take the workspace.
TEST(HipCudaRawApi, ClusterMergeMatchesTheWorkspaceMerge) {
  RAW_REQUIRE();
  for (const int64_t d : {int64_t{128}, int64_t{64}}) {
    for (const bool bf16 : {true, false}) {
      Small s;
      s.hq = 8, s.hkv = 2, s.tq = 1, s.tk = 4096, s.d = d;
      std::mt19937 rng(17);
      std::normal_distribution<float> nd;
      auto fill = [&](std::vector<float>& x, size_t n) {
        x.resize(n);
        for (float& f : x) f = bf16 ? gpu::bf16_to_float(gpu::float_to_bf16(nd(rng))) : gpu::f16_to_float(gpu::float_to_f16(nd(rng)));
      };
      fill(s.q, static_cast<size_t>(s.hq * s.d));
      fill(s.k, static_cast<size_t>(s.hkv * s.tk * s.d));
      fill(s.v, static_cast<size_t>(s.hkv * s.tk * s.d));
      s.p.k = 512, s.p.b_q = 64, s.p.b_k = 2, s.p.sink = 4, s.p.window = 8;
      const hip::MaskResult mask = hip::estimate_masks_reference(s.view(), s.p).mask;
      const hip::AttentionOutput ref = hip::sparse_attention_reference(s.view(), s.p, mask);
      auto qh = convert<uint16_t>(s.q, bf16), kh = convert<uint16_t>(s.k, bf16), vh = convert<uint16_t>(s.v, bf16);
      DeviceBuffer q = upload(qh.data(), qh.size() * 2), k = upload(kh.data(), kh.size() * 2), v = upload(vh.data(), vh.size() * 2);
      DeviceBuffer rb = upload(mask.blocks.data(), mask.blocks.size() * 4), rc = upload(mask.counts.data(), mask.counts.size() * 4);
      for (const int splits : {2, 5, 10, 16}) {
        std::vector<uint16_t> outs[2];
        for (const bool cluster : {true, false}) {
          DeviceBuffer out(static_cast<size_t>(s.hq * s.d) * 2);
          out.fill_bytes(0xff);  // NaN
          gpu::AttentionLaunch al =
              attention_launch(s, bf16 ? gpu::ElementType::kBF16 : gpu::ElementType::kF16, q, k, v, out, rb, rc);
          al.num_splits = splits, al.cluster_merge = cluster;
          ASSERT_EQ(gpu::attention_splits(al), splits);
          DeviceBuffer ws(gpu::attention_workspace_bytes(al, splits));
          al.workspace = ws.get();
          gpu::sparse_attention(al);
          std::vector<uint16_t>& raw = outs[cluster ? 0 : 1];
          raw.resize(static_cast<size_t>(s.hq * s.d));
          out.download(raw.data(), raw.size() * 2);
        }
        double num = 0, den = 0;
        for (size_t i = 0; i < outs[0].size(); ++i) {
          const float g = bf16 ? gpu::bf16_to_float(outs[0][i]) : gpu::f16_to_float(outs[0][i]);
          num += (g - ref.out[i]) * (g - ref.out[i]), den += ref.out[i] * ref.out[i];
        }
        const double err = std::sqrt(num / den);
        const bool same = outs[0] == outs[1];
        std::printf("[gpu] cluster merge d %lld %s splits %2d: %s the workspace merge, relative L2 %.3g from float64\n",
                    static_cast<long long>(d), bf16 ? "bf16" : "f16 ", splits, same ? "identical to" : "DIFFERENT from", err);
        EXPECT_TRUE(same) << "d " << d << " splits " << splits;
        EXPECT_LE(err, bf16 ? 1e-2 : 2e-3) << "d " << d << " splits " << splits;
      }
    }
  }
}

// A bf16 search case on integer inputs in [-amp, amp] (amp <= 8): bf16 products and float32 sums
// are exact there, so the masks, iteration and branch counts must equal the CPU reference's. amp 1
// is tie-heavy (the tie rule at the threshold), amp 8 mostly tie-free (the selections' early exits).
struct SearchCase {
  const char* name;
  int64_t hq, hkv, tq, tk, d, k, b_q, b_k, b_sq, b_sk, sink, window;
  double rho;
  int amp;
};

// Runs case c once per knob value (`set` puts it into the launch: the path and its width) and
// expects every output identical to the CPU reference; prints the fraction of identical entries.
void expect_searches_identical(const SearchCase& c, std::mt19937_64& rng, const std::string& path,
                               const std::vector<int>& knobs, const std::function<void(gpu::MaskLaunch&, int)>& set) {
  std::uniform_int_distribution<int> tri(-c.amp, c.amp);
  Small s;
  s.hq = c.hq, s.hkv = c.hkv, s.tq = c.tq, s.tk = c.tk, s.d = c.d;
  s.q.resize(static_cast<size_t>(s.hq * s.tq * s.d));
  s.k.resize(static_cast<size_t>(s.hkv * s.tk * s.d));
  for (float& x : s.q) x = static_cast<float>(tri(rng));
  for (float& x : s.k) x = static_cast<float>(tri(rng));
  s.p.k = c.k, s.p.b_q = c.b_q, s.p.b_k = c.b_k, s.p.b_sq = c.b_sq, s.p.b_sk = c.b_sk, s.p.sink = c.sink;
  s.p.window = c.window, s.p.rho = c.rho;
  const hip::MaskResult ref = hip::estimate_masks_reference(s.view(), s.p).mask;
  auto qh = convert<uint16_t>(s.q, true), kh = convert<uint16_t>(s.k, true);
  DeviceBuffer q = upload(qh.data(), qh.size() * 2), k = upload(kh.data(), kh.size() * 2);
  const size_t rows = ref.counts.size();
  DeviceBuffer blocks(ref.blocks.size() * 4), counts(rows * 4), iters(rows * 4), branches(rows * 8);
  for (int knob : knobs) {
    for (DeviceBuffer* b : {&blocks, &counts, &iters, &branches}) b->fill_bytes(0x7f);  // poison
    gpu::MaskLaunch ml;
    ml.q = q.get(), ml.k = k.get(), ml.dtype = gpu::ElementType::kBF16;
    ml.q_stride = strides(s.hq, s.tq, s.d), ml.k_stride = strides(s.hkv, s.tk, s.d);
    ml.hq = s.hq, ml.hkv = s.hkv, ml.tq = s.tq, ml.tk = s.tk, ml.d = s.d, ml.hip = s.p;
    ml.blocks = static_cast<int32_t*>(blocks.get()), ml.counts = static_cast<int32_t*>(counts.get());
    ml.iterations = static_cast<int32_t*>(iters.get()), ml.branches = static_cast<int64_t*>(branches.get());
    set(ml, knob);
    gpu::launch_estimate_masks(ml);
    std::vector<int32_t> got_blocks(ref.blocks.size()), got_counts(rows), got_iters(rows);
    std::vector<int64_t> got_branches(rows);
    blocks.download(got_blocks.data(), got_blocks.size() * 4);
    counts.download(got_counts.data(), rows * 4);
    iters.download(got_iters.data(), rows * 4);
    branches.download(got_branches.data(), rows * 8);
    size_t same = 0;
    for (size_t i = 0; i < got_blocks.size(); ++i) same += got_blocks[i] == ref.blocks[i];
    std::printf("[gpu] %s %-22s %2d: identical entries %zu / %zu\n", path.c_str(), c.name, knob, same, ref.blocks.size());
    EXPECT_EQ(got_blocks, ref.blocks) << c.name << " " << path << " " << knob;
    EXPECT_EQ(got_counts, ref.counts) << c.name << " " << path << " " << knob;
    EXPECT_EQ(got_iters, ref.iterations) << c.name << " " << path << " " << knob;
    EXPECT_EQ(got_branches, ref.branches) << c.name << " " << path << " " << knob;
  }
}

// The warp-search mask path with every warp count it can run (1 warp per search in prefill, up to
// 16 in decode).
TEST(HipCudaRawApi, WarpSearchMasksIdenticalForEveryWarpCount) {
  RAW_REQUIRE();
  const SearchCase cases[] = {
      {"prefill kb32 kpr2", 4, 1, 1024, 1024, 128, 64, 32, 2, 1, 1, 0, 0, 0.5, 1},
      {"prefill kb256 bsq2", 4, 1, 160, 2600, 128, 512, 64, 2, 2, 1, 0, 0, 0.5, 1},
      {"prefill kb256 wide", 4, 1, 160, 2600, 128, 512, 64, 2, 2, 1, 0, 0, 0.5, 8},
      {"prefill kpr1 d64", 4, 2, 700, 700, 64, 64, 32, 2, 1, 2, 4, 8, 0.5, 1},
      {"prefill kpr4 rho0", 4, 2, 600, 900, 64, 128, 16, 4, 1, 1, 0, 0, 0.0, 1},
      {"prefill kpr8 rho1", 2, 1, 500, 1500, 128, 128, 32, 8, 1, 1, 8, 0, 1.0, 8},
      {"prefill bq8 one n-tile", 4, 2, 300, 900, 128, 64, 8, 2, 1, 1, 0, 0, 0.5, 8},
      {"decode kb128", 8, 2, 1, 5000, 128, 256, 32, 2, 1, 1, 0, 0, 0.5, 1},
      {"decode kb256 wide", 8, 2, 1, 9000, 128, 512, 32, 2, 1, 1, 0, 0, 0.5, 8},
  };
  std::mt19937_64 rng(static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (const SearchCase& c : cases) {
    const int max_w = (std::min(c.b_q, c.tq) + c.b_sq - 1) / c.b_sq > 16 ? 4 : 16;  // one m-tile of rows: up to 16
    std::vector<int> ws;
    for (int w = 1; w <= max_w; w *= 2) ws.push_back(w);
    expect_searches_identical(c, rng, "warp search W", ws, [](gpu::MaskLaunch& ml, int w) { ml.warps_per_search = w; });
  }
}

// The few-search path (a CTA of 16 warps per search, or a cluster of 2 or 4 on sm_90; where the
// device has no clusters the launch runs 1 CTA each) on searches of <= 16 sampled rows: decode,
// Kb up to 256 (every thread a branch slot), Kb not a power of two, 1/2/4/8 keys per branch, sink
// and window, prefill blocks of 16, 8 and 3 rows (a partial last block, short ranges that fit
// whole). Each case on 1, 2 and 4 CTAs (clusters exchange scores by st.async onto an mbarrier).
TEST(HipCudaRawApi, ClusterSearchMasksIdenticalForEveryClusterSize) {
  RAW_REQUIRE();
  const SearchCase cases[] = {
      {"decode kb128", 8, 2, 1, 5000, 128, 256, 32, 2, 1, 1, 0, 0, 0.5, 1},
      {"decode kb256 ties", 4, 1, 1, 20000, 128, 512, 32, 2, 1, 1, 0, 0, 0.5, 1},
      {"decode kb256 wide", 8, 2, 1, 9000, 128, 512, 32, 2, 1, 1, 0, 0, 0.5, 8},
      {"decode kb100", 4, 1, 1, 3333, 128, 200, 32, 2, 1, 1, 0, 0, 0.5, 1},
      {"decode kb37 d64", 4, 2, 1, 2900, 64, 74, 32, 2, 1, 1, 0, 0, 0.5, 8},
      {"decode kpr1 d64 sink", 4, 2, 1, 3000, 64, 64, 32, 2, 1, 2, 4, 8, 0.5, 1},
      {"decode kpr4 rho0", 4, 2, 1, 4000, 64, 128, 32, 4, 1, 1, 0, 0, 0.0, 1},
      {"decode kpr8 rho1", 2, 1, 1, 6000, 128, 128, 32, 8, 1, 1, 8, 0, 1.0, 8},
      {"prefill bq16 rows16", 2, 1, 100, 700, 128, 64, 16, 2, 1, 1, 0, 0, 0.5, 1},
      {"prefill bq32 bsq2 d64", 2, 1, 64, 900, 64, 64, 32, 2, 2, 1, 0, 0, 0.5, 8},
      {"prefill bq8 rows8", 2, 1, 100, 700, 128, 64, 8, 2, 1, 1, 0, 0, 0.5, 8},
      {"prefill bsq4 rows3 d64", 2, 1, 90, 800, 64, 64, 12, 2, 4, 1, 0, 0, 0.5, 1},
  };
  std::mt19937_64 rng(static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (const SearchCase& c : cases)
    expect_searches_identical(c, rng, "cluster search CTAs", {1, 2, 4},
                              [](gpu::MaskLaunch& ml, int ctas) { ml.ctas_per_search = ctas; });
}

TEST(HipCudaRawApi, LaunchErrorsAreExceptions) {
  RAW_REQUIRE();
  gpu::MaskLaunch ml;  // null pointers
  ml.hq = 1, ml.hkv = 1, ml.tq = 1, ml.tk = 1, ml.d = 8;
  EXPECT_THROW(gpu::launch_estimate_masks(ml), gpu::CudaError);
  gpu::AttentionLaunch al;
  EXPECT_THROW(gpu::sparse_attention(al), gpu::CudaError);
}
#else
TEST(HipCudaRawApi, SmallCasesMatchReference) { GTEST_SKIP() << "this build has no CUDA kernels (nvcc not found)"; }
#endif

}  // namespace
}  // namespace hipstudio
