#pragma once
// Device pieces shared by the two tensor-core search kernels (mask_warp_kernel.cu: a warp per
// search; mask_cluster_kernel.cu: a CTA or cluster per search): the branch representative, the
// order-preserving score key, Q as mma A fragments, and the reduction of a scored 16-key tile.
//
// Scoring layout (both kernels): a tile is 16 sampled keys, two n-tiles of 8, the keys being the
// mma B operand. Lane (g, c) = (lane / 4, lane % 4) copies exactly its B fragments, the 16-byte
// pieces c, c + 4, ... of keys g and 8 + g, into its own ring slots; the head dimension of Q is
// permuted the same way, which leaves the dot products unchanged (only the order of the tensor
// core's float32 sums differs, which bf16 scores do not pin down).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/common.cuh"

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

// Order-preserving key of a float score (larger score, larger key; -0 == +0). Real keys are >=
// 0x007fffff (the key of -inf), so 0 marks "no branch".
__device__ __forceinline__ uint32_t score_key32(float s) {
  if (s == 0.f) s = 0.f;
  const uint32_t u = __float_as_uint(s);
  return (u >> 31) ? ~u : (u | 0x80000000u);
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

// Finishes a scored tile: k<nt><e> is this lane's max over its rows for key nt * 8 + 2c + e. Reduced
// over g by a reduce-scatter (lane bit 4 keeps one n-tile, bit 3 one parity), then over the 2^kpr_log2
// sampled keys of a branch. Returns the score this lane writes (NaN-free: fmaxf ignores a NaN operand
// like the reference's max, all-NaN becomes -inf) and, in *pair, the tile-local index of the first
// sampled key of its branch, or -1 where the lane writes nothing (lanes holding copies).
__device__ __forceinline__ float tile_branch_score(float k00, float k01, float k10, float k11, int kpr_log2, int lane,
                                                   int* pair) {
  const int b4 = (lane >> 4) & 1, b3 = (lane >> 3) & 1, b2 = (lane >> 2) & 1, cq = lane & 3;
  float m;
  if (kpr_log2 == 0) {
    const float s0 = b4 ? k00 : k10, s1 = b4 ? k01 : k11;
    const float e0 = fmaxf(b4 ? k10 : k00, __shfl_xor_sync(0xffffffffu, s0, 16));
    const float e1 = fmaxf(b4 ? k11 : k01, __shfl_xor_sync(0xffffffffu, s1, 16));
    m = fmaxf(b3 ? e1 : e0, __shfl_xor_sync(0xffffffffu, b3 ? e0 : e1, 8));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
    *pair = b2 == 0 ? b4 * 8 + 2 * cq + b3 : -1;
  } else {
    const float f0 = fmaxf(k00, k01), f1 = fmaxf(k10, k11);
    m = fmaxf(b4 ? f1 : f0, __shfl_xor_sync(0xffffffffu, b4 ? f0 : f1, 16));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
    if (kpr_log2 >= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    if (kpr_log2 >= 3) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    const int kpr = 1 << kpr_log2;
    *pair = b2 == 0 && b3 == 0 && (cq & ((kpr >> 1) - 1)) == 0 ? b4 * 8 + 2 * cq : -1;
  }
  return m == m ? m : -INFINITY;
}

}  // namespace hipstudio::gpu
