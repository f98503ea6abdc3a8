#pragma once
// The register fragments of the few-row scoring (kernels/cuda/mask_search.cuh score_tile_keys_a,
// v17): keys as the A operand of an m16n8k16 mma, Q's sampled rows as its B operand. Plain C++
// too: tests/kernels/few_row_fragments_test.cpp emulates the mma on them.
//
// Lane (g, c) = (lane / 4, lane % 4) holds 16-byte pieces c + 4j (8 values, 4 words) of keys g and
// 8 + g (v0, v1: its ring slots) and of Q's sampled row g (q). The head dimension is permuted: in
// k-step 2j + h, words 2h and 2h + 1 of piece c + 4j stand at the k positions 2c.. and 2c + 8.. of
// the mma (common.cuh mma16816 gives the fragment layout).
#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace hipstudio::gpu {

// A fragment of k-step 2j + h: A[g][2c..], A[g+8][2c..], A[g][2c+8..], A[g+8][2c+8..].
template <class V>
HIPSTUDIO_HOST_DEVICE void few_row_key_fragment(const V& v0, const V& v1, int h, uint32_t* a) {
  a[0] = h ? v0.z : v0.x, a[1] = h ? v1.z : v1.x, a[2] = h ? v0.w : v0.y, a[3] = h ? v1.w : v1.y;
}

// B fragment of k-step 2j + h: B[2c..][g], B[2c+8..][g] (sampled row g's words 2h, 2h + 1).
template <class V>
HIPSTUDIO_HOST_DEVICE void few_row_query_fragment(const V& q, int h, uint32_t* b) {
  b[0] = h ? q.z : q.x, b[1] = h ? q.w : q.y;
}

// After the per-branch reduction (lane bits 2.. are the key index g within each half of the tile),
// the lane that writes the scores of the branches whose first keys are g and 8 + g, tile-local;
// -1 for the other lanes. Branches are 2^kpr_log2 consecutive keys (kpr_log2 <= 3).
HIPSTUDIO_HOST_DEVICE int few_row_writer_key(int lane, int kpr_log2) {
  const int g = lane >> 2;
  return (lane & 3) == 0 && (g & ((1 << kpr_log2) - 1)) == 0 ? g : -1;
}

// The CTA of a cluster of `ctas` that scores branch slot `slot`: the owner of the 16-key tile of its
// first key, tiles going to the CTAs 16 at a time (one a warp), round robin.
HIPSTUDIO_HOST_DEVICE int score_owner_cta(int slot, int kpr_log2, int ctas) {
  return (((slot << kpr_log2) >> 4) >> 4) & (ctas - 1);
}

}  // namespace hipstudio::gpu
