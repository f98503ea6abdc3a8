#pragma once
// The warp-per-search mask estimation path (mask_warp_kernel.cu), used by launch_estimate_masks
// (mask_kernel.cu) for the tensor-core shapes it covers; mask_kernel.cu keeps every other case.
#include <cstdint>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

// True when l (already validated) is a bf16/f16 launch without a trace, Kb <= 512, <= 32 sampled
// query rows, d 64 or 128, 1/2/4/8 sampled keys per branch and 16-byte aligned rows.
bool warp_mask_eligible(const MaskLaunch& l);
// Warps per search the launch picks for `items` searches of `rows` sampled query rows (more when
// few searches run: decode; at most 4 for more than 16 rows).
int warp_mask_warps_per_search(int64_t items, int64_t rows);
// Launches it; warps_per_search 0 picks warp_mask_warps_per_search(items, rows).
void estimate_masks_warp(const MaskLaunch& l, int warps_per_search = 0);

}  // namespace hipstudio::gpu
