// The one-row decode attention (decode_attention.h says when and why): one CTA of 4 warps per
// (split, head, batch entry), the query's single row against its split of the key list (sink,
// selected blocks, dense tail: attention_parts.cuh's KeyList, the tensor-core kernel's list).
// Same semantics as kernels/sparse_attention_reference.h.
//
// A CTA: (1) the split's key ids into shared memory, (2) every K and V row of them gathered by
// 16-byte cp.async at once (as a programmatic dependent: the rows of keys before the query's
// position before griddepcontrol.wait, the query's own key after it), (3) Q after the wait, (4)
// each warp scores a quarter of the keys (a half-warp a key, 8 columns a lane, float32), its
// softmax and P V in float32 (a lane owns 4 output columns), (5) the 4 warps' partial rows folded
// through shared memory, (6) with splits, the partial row stored and the last CTA of the row to
// count itself done merges them all (one batch of loads for up to 8 splits). Splits longer than
// the shared memory's chunk loop over chunks with an online softmax.
#include "kernels/cuda/decode_attention.h"

#include <cmath>
#include <cstring>

#include "kernels/cuda/attention_parts.cuh"
#include "kernels/cuda/common.cuh"

namespace hipstudio::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kCtaThreads = kWarps * 32;
constexpr int kPairs = 4;  // key pairs a warp scores together
constexpr int kCtaKeyRounds = kOneRowMaxChunkKeys / kCtaThreads;  // a chunk's key ids a thread computes
static_assert(kOneRowMaxChunkKeys % kCtaThreads == 0, "a chunk's keys are whole rounds of the CTA's threads");

template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    T pair[2];
    memcpy(pair, &w[k], 4);
    f[2 * k] = to_f32(pair[0]);
    f[2 * k + 1] = to_f32(pair[1]);
  }
}

template <class T>
__device__ __forceinline__ void unpack4(const uint2& v, float* f) {
  const uint32_t w[2] = {v.x, v.y};
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    T pair[2];
    memcpy(pair, &w[k], 4);
    f[2 * k] = to_f32(pair[0]);
    f[2 * k + 1] = to_f32(pair[1]);
  }
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Folds the partial (m, l, o) of another part of the row's keys into (M, L, O); m in log2 units,
// -inf for a part without keys.
__device__ __forceinline__ void fold(float& M, float& L, float4& O, float m, float l, const float4& o) {
  if (m == -INFINITY) return;
  const float mn = fmaxf(M, m);
  const float self = fast_exp2(M - mn), other = fast_exp2(m - mn);  // 2^-inf = 0 for an empty (M, L, O)
  M = mn;
  L = L * self + l * other;
  O.x = O.x * self + o.x * other, O.y = O.y * self + o.y * other;
  O.z = O.z * self + o.z * other, O.w = O.w * self + o.w * other;
}

template <class T>
__device__ __forceinline__ void store_quad(T* p, const float4& o, float inv) {
  *reinterpret_cast<uint32_t*>(p) = pack2<T>(o.x * inv, o.y * inv);
  *reinterpret_cast<uint32_t*>(p + 2) = pack2<T>(o.z * inv, o.w * inv);
}

// Up to 128 threads' registers with 4 CTAs an SM: the CTA must fit beside the q/k/v projection's
// three 256-thread blocks of 64 registers (48 K of the SM's 64 K registers).
template <class T, int D>
__global__ void __launch_bounds__(kCtaThreads, 4) one_row_decode_kernel(const AttnArgs a, int chunk_keys) {
  constexpr int kPieces = D / 8;                          // 16-byte pieces of a (padded) row
  constexpr int kRowsPerPass = kCtaThreads / kPieces;     // rows one pass of the copy loop covers
  extern __shared__ __align__(16) uint8_t smem_raw[];
  T* sk = reinterpret_cast<T*>(smem_raw);                                        // [chunk][D]
  T* sv = sk + static_cast<size_t>(chunk_keys) * D;                              // [chunk][D]
  int* skey = reinterpret_cast<int*>(sv + static_cast<size_t>(chunk_keys) * D);  // [chunk]
  float* sp = reinterpret_cast<float*>(skey + chunk_keys);                       // [chunk]: scores, then P
  float* red_o = sp + chunk_keys;                                                // [warps][D]
  float* red_ml = red_o + kWarps * D;                                            // [warps][2]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  CtaCoords c;
  c.split = static_cast<int>(blockIdx.x), c.h = static_cast<int>(blockIdx.y), c.b = static_cast<int>(blockIdx.z);
  c.qb = 0, c.r0 = 0, c.r1 = 1;  // tq == 1: one query block, one row
  c.item = c.b * a.hq + c.h;
  const int g = static_cast<int>(a.by_group.div(static_cast<uint32_t>(c.h)));
  const int d = a.d, pieces = d / 8;
  const int e = visible_end(a, 0);
  const KeyList<int> kl = key_list<int>(a, c, e, a.splits > 1);
  const int lo = static_cast<int>(static_cast<int64_t>(kl.total) * c.split / a.splits);
  const int hi = static_cast<int>(static_cast<int64_t>(kl.total) * (c.split + 1) / a.splits);
  const T* kbase = static_cast<const T*>(a.k) + c.b * a.ks.b + g * a.ks.h;
  const T* vbase = static_cast<const T*>(a.v) + c.b * a.vs.b + g * a.vs.h;

  // K and V rows of the chunk's entries whose key `take` accepts; zeros where an entry has no key.
  // Thread t copies piece t % kPieces of every kRowsPerPass-th row.
  const int copy_piece = tid % kPieces;
  auto copy_rows = [&](int n, auto take) {
    for (int i = tid / kPieces; i < n; i += kRowsPerPass) {
      const int key = skey[i];
      if (!take(key)) continue;
      const bool valid = key >= 0 && copy_piece < pieces;
      const int64_t k_off = valid ? key * a.ks.t + copy_piece * 8 : 0, v_off = valid ? key * a.vs.t + copy_piece * 8 : 0;
      cp_async16(sk + i * D + copy_piece * 8, kbase + k_off, valid);
      cp_async16(sv + i * D + copy_piece * 8, vbase + v_off, valid);
    }
  };

  // QK: lane l scores keys of its half-warp (l / 16) with columns [8 (l % 16), + 8).
  const int half = lane >> 4, piece = lane & 15;
  float qf[8] = {};
  float m = -INFINITY, l = 0.f;  // this warp's running max (log2 units) and sum
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);  // its P V, columns [4 lane, + 4)
  bool waited = false;
  for (int base = lo; base < hi; base += chunk_keys) {
    const int n = min(chunk_keys, hi - base);
    // Both block-id loads of a thread in flight together (one dependent round trip, not two).
    int blk[kCtaKeyRounds];
#pragma unroll
    for (int u = 0; u < kCtaKeyRounds; ++u) blk[u] = tid + u * kCtaThreads < n ? kl.block_of(base + tid + u * kCtaThreads) : 0;
#pragma unroll
    for (int u = 0; u < kCtaKeyRounds; ++u)
      if (tid + u * kCtaThreads < n) skey[tid + u * kCtaThreads] = kl.key(base + tid + u * kCtaThreads, blk[u]);
    __syncthreads();
    if (!waited) {
      // The promise (AttentionLaunch::mask_before_prior_kernel): keys before the query's position
      // were written before the kernels this launch may overlap; its own key (e) only after them.
      copy_rows(n, [e](int key) { return key < e; });
      cp_async_commit();
      wait_for_prior_grid();  // a no-op in a plain launch
      waited = true;
      copy_rows(n, [e](int key) { return key >= e; });
      if (piece < pieces) {
        const T* qrow = static_cast<const T*>(a.q) + c.b * a.qs.b + c.h * a.qs.h;
        unpack8<T>(*reinterpret_cast<const uint4*>(qrow + piece * 8), qf);
      }
    } else {
      copy_rows(n, [](int) { return true; });
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    const int w_lo = n * warp / kWarps, w_hi = n * (warp + 1) / kWarps;
    // kPairs key pairs a round, their shuffle reductions interleaved (independent chains); uniform
    // trip count: the shuffles need all 32 lanes.
    for (int j0 = w_lo; j0 < w_hi; j0 += 2 * kPairs) {
      float s[kPairs];
#pragma unroll
      for (int u = 0; u < kPairs; ++u) {
        const int j = j0 + 2 * u + half;
        s[u] = 0.f;
        if (j < w_hi && piece < pieces) {
          float kf[8];
          unpack8<T>(*reinterpret_cast<const uint4*>(sk + j * D + piece * 8), kf);
#pragma unroll
          for (int t = 0; t < 8; ++t) s[u] = fmaf(qf[t], kf[t], s[u]);
        }
      }
#pragma unroll
      for (int o = 8; o > 0; o >>= 1)  // within each half-warp
#pragma unroll
        for (int u = 0; u < kPairs; ++u) s[u] += __shfl_xor_sync(0xffffffffu, s[u], o);
#pragma unroll
      for (int u = 0; u < kPairs; ++u) {
        const int j = j0 + 2 * u + half;
        if (j < w_hi && piece == 0) {
          const int key = skey[j];
          sp[j] = key < 0 || key > e ? -INFINITY : s[u] * a.scale_log2;
        }
      }
    }
    __syncwarp();
    float mx = -INFINITY;
    for (int j = w_lo + lane; j < w_hi; j += 32) mx = fmaxf(mx, sp[j]);
    const float mn = fmaxf(m, warp_max(mx));
    if (mn != -INFINITY) {  // the same in every lane
      const float alpha = fast_exp2(m - mn);
      float ls = 0.f;
      for (int j = w_lo + lane; j < w_hi; j += 32) {
        const float p = fast_exp2(sp[j] - mn);
        sp[j] = p;
        ls += p;
      }
      l = l * alpha + warp_sum(ls);
      m = mn;
      acc.x *= alpha, acc.y *= alpha, acc.z *= alpha, acc.w *= alpha;
      __syncwarp();
      if (4 * lane < d) {
#pragma unroll 4
        for (int j = w_lo; j < w_hi; ++j) {
          const float p = sp[j];
          float vf[4];
          unpack4<T>(*reinterpret_cast<const uint2*>(sv + j * D + 4 * lane), vf);
          acc.x = fmaf(p, vf[0], acc.x), acc.y = fmaf(p, vf[1], acc.y);
          acc.z = fmaf(p, vf[2], acc.z), acc.w = fmaf(p, vf[3], acc.w);
        }
      }
    }
    __syncthreads();  // the next chunk rewrites the keys, rows and scores
  }
  if (!waited) wait_for_prior_grid();  // an empty split writes nothing before the kernel before has ended

  // The 4 warps' partial rows, folded by the threads of the row's column quads.
  if (4 * lane < d) *reinterpret_cast<float4*>(red_o + warp * D + 4 * lane) = acc;
  if (lane == 0) red_ml[2 * warp] = m, red_ml[2 * warp + 1] = l;
  __syncthreads();
  const int64_t r = c.item;  // the row's index in (batch, hq, tq = 1)
  const bool quad = tid < D / 4 && 4 * tid < d;
  T* orow = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h;
  if (quad) {
    float M = -INFINITY, L = 0.f;
    float4 O = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      fold(M, L, O, red_ml[2 * w], red_ml[2 * w + 1], *reinterpret_cast<const float4*>(red_o + w * D + 4 * tid));
    if (a.splits == 1) {
      store_quad<T>(orow + 4 * tid, O, L > 0.f ? 1.f / L : 0.f);
    } else {
      const int64_t pr = c.split * a.rows_total + r;
      *reinterpret_cast<float4*>(a.part_o + pr * d + 4 * tid) = O;
      if (tid == 0) *reinterpret_cast<float2*>(a.part_ml + 2 * pr) = make_float2(M, L);
    }
  }
  if (a.splits == 1) return;

  // The last CTA of the row merges (the tensor-core kernel's protocol: the barrier orders every
  // thread's partial stores before thread 0's acq_rel count, whose acquire in the last CTA the
  // second barrier hands on; partials are read from L2 by ld.global.cg; the last CTA resets the count).
  __shared__ unsigned last;
  __syncthreads();
  if (tid == 0) {
    unsigned* done = a.done + r;
    const unsigned prev = atomic_add_acq_rel_gpu(done, 1u);
    last = prev + 1 == static_cast<unsigned>(a.splits);
    if (last) *done = 0u;
  }
  __syncthreads();
  if (!last || !quad) return;
  float M = -INFINITY, L = 0.f;
  float4 O = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int s0 = 0; s0 < a.splits; s0 += 8) {  // 8 splits' loads in flight together
    float2 ml[8];
    float4 po[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int s = s0 + u;
      const int64_t pr = static_cast<int64_t>(s) * a.rows_total + r;
      ml[u] = s < a.splits ? __ldcg(reinterpret_cast<const float2*>(a.part_ml + 2 * pr)) : make_float2(-INFINITY, 0.f);
      po[u] = s < a.splits ? __ldcg(reinterpret_cast<const float4*>(a.part_o + pr * d + 4 * tid))
                           : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) fold(M, L, O, ml[u].x, ml[u].y, po[u]);
  }
  store_quad<T>(orow + 4 * tid, O, L > 0.f ? 1.f / L : 0.f);
}

}  // namespace

void launch_one_row_decode(const AttnArgs& a, DType dtype, int d_pad, int chunk_keys, int64_t batch, void* stream,
                           bool after_prior) {
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.hq), static_cast<unsigned>(batch));
  const cudaStream_t s = as_stream(stream);
  auto launch = [&](auto kernel, size_t elem_bytes) {
    const size_t smem = one_row_decode_smem_bytes(d_pad, chunk_keys, elem_bytes);
    // The largest shared part of L1, as the projections ask (row_gemv.cu): the CTA is to fit beside them.
    set_smem(reinterpret_cast<const void*>(kernel), smem, "one-row decode attention", /*max_shared_carveout=*/true);
    if (after_prior) launch_after_prior(kernel, grid, dim3(kCtaThreads), smem, s, a, chunk_keys);
    else kernel<<<grid, kCtaThreads, smem, s>>>(a, chunk_keys);
  };
  auto by_d = [&](auto tag) {
    using T = decltype(tag);
    if (d_pad == 64) launch(one_row_decode_kernel<T, 64>, sizeof(T));
    else launch(one_row_decode_kernel<T, 128>, sizeof(T));
  };
  if (dtype == DType::kBF16) by_d(__nv_bfloat16{});
  else by_d(__half{});
  HIP_CUDA_CHECK_LAUNCH("one_row_decode_attention");
}

}  // namespace hipstudio::gpu
