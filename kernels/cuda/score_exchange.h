#pragma once
// Who writes which branch score: the lane of a scored 16-key tile (mask_search.cuh
// tile_branch_score) and, when a few-search (kernels/cuda/mask_cluster_kernel.cu) spans a cluster
// of CTAs, the CTA, and so how many score bytes each CTA must expect from the others an iteration.
// Plain C++ too: tests/kernels/score_exchange_test.cpp checks the accounting on the CPU, since a
// miscount would hang the cluster on its exchange barrier.
#include "kernels/cuda/host_device.h"

namespace hipstudio::gpu {

// After tile_branch_score's reduction, the tile-local index of the first key of the branch whose
// score lane `lane` writes, -1 for the lanes that write none. Branches are 2^kpr_log2 consecutive
// keys (kpr_log2 <= 3); which lane ends up with which branch follows the order of
// tile_branch_score's shuffles (lane bit 4: the n-tile, bit 3: the key of a pair, c = lane % 4: the
// pair).
HIPSTUDIO_HOST_DEVICE int tile_writer_key(int lane, int kpr_log2) {
  const int b4 = (lane >> 4) & 1, b3 = (lane >> 3) & 1, b2 = (lane >> 2) & 1, cq = lane & 3;
  if (kpr_log2 == 0) return b2 == 0 ? b4 * 8 + 2 * cq + b3 : -1;
  const int kpr = 1 << kpr_log2;
  return b2 == 0 && b3 == 0 && (cq & ((kpr >> 1) - 1)) == 0 ? b4 * 8 + 2 * cq : -1;
}

// The CTA of a cluster of `ctas` that scores branch slot `slot`: the owner of the 16-key tile of its
// first key, tiles going to the CTAs 16 at a time (one a warp), round robin.
HIPSTUDIO_HOST_DEVICE int score_owner_cta(int slot, int kpr_log2, int ctas) {
  return (((slot << kpr_log2) >> 4) >> 4) & (ctas - 1);
}

}  // namespace hipstudio::gpu
