#pragma once
// The few-search mask estimation path (mask_cluster_kernel.cu): one CTA of 512 threads, or a
// thread-block cluster of 2-4 of them on sm_90, per search. launch_estimate_masks (mask_kernel.cu) takes it
// for the warp-search shapes with <= 16 sampled query rows (decode) when too few searches run to
// fill the GPU one warp each.
#include <cstdint>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

// True when l is warp-search eligible (mask_warp.h) with <= 16 sampled rows and Kb <= 256.
bool cluster_mask_eligible(const MaskLaunch& l);
// CTAs per search for `items` searches: 0 when the warp-search kernel suits better (many searches),
// else 1, 2 or 4 (a cluster, sm_90 only) so that items x CTAs stays within the multiprocessors.
int cluster_mask_ctas_per_search(int64_t items);
// Launches it with `ctas` CTAs per search (1, 2 or 4; above 1 needs thread-block clusters and
// falls back to fewer when the device cannot co-schedule them).
void estimate_masks_cluster(const MaskLaunch& l, int ctas);

}  // namespace hipstudio::gpu
