#pragma once
// Device pieces shared by the two tensor-core search kernels (mask_warp_kernel.cu: a warp per
// search; mask_cluster_kernel.cu: a CTA or cluster per search): the branch representative,
// Q as mma A fragments, and the reduction of a scored 16-key tile.
//
// Scoring layout (both kernels): a tile is 16 sampled keys, two n-tiles of 8, the keys being the
// mma B operand. Lane (g, c) = (lane / 4, lane % 4) copies exactly its B fragments, the 16-byte
// pieces c, c + 4, ... of keys g and 8 + g, into its own ring slots; the head dimension of Q is
// permuted the same way, which leaves the dot products unchanged (only the order of the tensor
// core's float32 sums differs, which bf16 scores do not pin down).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/radix_select.h"  // score_key32
#include "kernels/cuda/score_exchange.h"  // tile_writer_key

namespace hipstudio::gpu {

// The representative block of branch [begin, end): kernels/mask_reference.cpp's rule.
__device__ __forceinline__ int repr_of(int begin, int end, double rho) {
  const int len = end - begin;
  return begin + min(len - 1, static_cast<int>(floor(rho * static_cast<double>(len))));
}

// Start of initial node `node` of Kb nodes of (nearly) equal size over [lo, lo + n): lo + node n / Kb,
// node in [0, Kb]. In 32 bits where n Kb fits (a 64-bit division is a ~100-instruction routine,
// and every search starts with 2 Kb of them).
__device__ __forceinline__ int initial_node_start(int64_t lo, int64_t n, int kb, int node) {
  if (n * kb < (int64_t{1} << 32)) {
    return static_cast<int>(lo + static_cast<uint32_t>(node) * static_cast<uint32_t>(n) / static_cast<uint32_t>(kb));
  }
  return static_cast<int>(lo + node * n / kb);
}

// The A fragments of one m-tile of 16 sampled query rows (rows mt * 16 + g and + 8; rows >= R are
// zero), head dimension permuted as the key pieces: k-step 2j + h of lane (g, c) uses words 2h,
// 2h + 1 of piece c + 4j. qrow0: Q's first sampled row; row_step: elements between sampled rows.
template <class T, int D>
__device__ __forceinline__ void load_q_mtile(uint32_t (*qf)[4], const T* qrow0, int64_t row_step, int R, int mt,
                                             int lane) {
  const int gq = lane >> 2, cq = lane & 3;
  const int r0 = mt * 16 + gq, r1 = r0 + 8;
  const T* q0 = qrow0 + static_cast<int64_t>(r0) * row_step;
  const T* q1 = qrow0 + static_cast<int64_t>(r1) * row_step;
#pragma unroll
  for (int j = 0; j < D / 32; ++j) {
    const int col = (cq + 4 * j) * 8;
    const uint4 z = make_uint4(0, 0, 0, 0);
    const uint4 v0 = r0 < R ? __ldg(reinterpret_cast<const uint4*>(q0 + col)) : z;
    const uint4 v1 = r1 < R ? __ldg(reinterpret_cast<const uint4*>(q1 + col)) : z;
    qf[2 * j][0] = v0.x, qf[2 * j][1] = v1.x, qf[2 * j][2] = v0.y, qf[2 * j][3] = v1.y;
    qf[2 * j + 1][0] = v0.z, qf[2 * j + 1][1] = v1.z, qf[2 * j + 1][2] = v0.w, qf[2 * j + 1][3] = v1.w;
  }
}

// Which accumulator rows of this lane are real sampled rows: bit 2 mt + e for row mt * 16 + g + 8 e
// (rows past R score 0 on zero Q rows and must not count).
template <int MT>
__device__ __forceinline__ uint32_t real_rows_mask(int R, int lane) {
  const int gq = lane >> 2;
  uint32_t ok = 0;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
    ok |= (static_cast<uint32_t>(mt * 16 + gq < R) | static_cast<uint32_t>(mt * 16 + gq + 8 < R) << 1) << (2 * mt);
  return ok;
}

// Scores one ring stage of 16 keys (src: this lane's slots, 2 PL uint4 of keys g and 8 + g) against
// MT m-tiles of Q fragments, MT x 2 independent accumulator chains, B pairs straight out of the
// 16-byte slots; returns this lane's max over its real rows in k<nt><e> for key nt * 8 + 2c + e.
template <class T, int D, int MT>
__device__ __forceinline__ void score_tile(const uint4* src, const uint32_t (*qf)[D / 16][4], uint32_t row_ok,
                                           bool all_rows, float& k00, float& k01, float& k10, float& k11) {
  constexpr int PL = D / 32;
  float acc[MT][2][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int x = 0; x < 8; ++x) acc[mt][x >> 2][x & 3] = 0.f;
#pragma unroll
  for (int j = 0; j < PL; ++j) {
    const uint4 v0 = src[j * 32], v1 = src[(PL + j) * 32];
    const uint32_t b00[2] = {v0.x, v0.y}, b01[2] = {v0.z, v0.w};
    const uint32_t b10[2] = {v1.x, v1.y}, b11[2] = {v1.z, v1.w};
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      mma16816<T>(acc[mt][0], qf[mt][2 * j], b00);
      mma16816<T>(acc[mt][1], qf[mt][2 * j], b10);
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      mma16816<T>(acc[mt][0], qf[mt][2 * j + 1], b01);
      mma16816<T>(acc[mt][1], qf[mt][2 * j + 1], b11);
    }
  }
  k00 = k01 = k10 = k11 = -INFINITY;
  if (all_rows) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      k00 = fmaxf(k00, fmaxf(acc[mt][0][0], acc[mt][0][2])), k01 = fmaxf(k01, fmaxf(acc[mt][0][1], acc[mt][0][3]));
      k10 = fmaxf(k10, fmaxf(acc[mt][1][0], acc[mt][1][2])), k11 = fmaxf(k11, fmaxf(acc[mt][1][1], acc[mt][1][3]));
    }
  } else {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if ((row_ok >> (2 * mt)) & 1) {
        k00 = fmaxf(k00, acc[mt][0][0]), k01 = fmaxf(k01, acc[mt][0][1]);
        k10 = fmaxf(k10, acc[mt][1][0]), k11 = fmaxf(k11, acc[mt][1][1]);
      }
      if ((row_ok >> (2 * mt + 1)) & 1) {
        k00 = fmaxf(k00, acc[mt][0][2]), k01 = fmaxf(k01, acc[mt][0][3]);
        k10 = fmaxf(k10, acc[mt][1][2]), k11 = fmaxf(k11, acc[mt][1][3]);
      }
    }
  }
}

// Finishes a scored tile: k<nt><e> is this lane's max over its rows for key nt * 8 + 2c + e. Reduced
// over g by a reduce-scatter (lane bit 4 keeps one n-tile, bit 3 one parity), then over the 2^kpr_log2
// sampled keys of a branch. Returns the score this lane writes (NaN-free: fmaxf ignores a NaN operand
// like the reference's max, all-NaN becomes -inf) and, in *pair, the tile-local index of the first
// sampled key of its branch, or -1 where the lane writes nothing (lanes holding copies).
__device__ __forceinline__ float tile_branch_score(float k00, float k01, float k10, float k11, int kpr_log2, int lane,
                                                   int* pair) {
  const int b4 = (lane >> 4) & 1, b3 = (lane >> 3) & 1;
  float m;
  if (kpr_log2 == 0) {
    const float s0 = b4 ? k00 : k10, s1 = b4 ? k01 : k11;
    const float e0 = fmaxf(b4 ? k10 : k00, __shfl_xor_sync(0xffffffffu, s0, 16));
    const float e1 = fmaxf(b4 ? k11 : k01, __shfl_xor_sync(0xffffffffu, s1, 16));
    m = fmaxf(b3 ? e1 : e0, __shfl_xor_sync(0xffffffffu, b3 ? e0 : e1, 8));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
  } else {
    const float f0 = fmaxf(k00, k01), f1 = fmaxf(k10, k11);
    m = fmaxf(b4 ? f1 : f0, __shfl_xor_sync(0xffffffffu, b4 ? f0 : f1, 16));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
    if (kpr_log2 >= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    if (kpr_log2 >= 3) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
  }
  *pair = tile_writer_key(lane, kpr_log2);
  return m == m ? m : -INFINITY;
}

}  // namespace hipstudio::gpu
