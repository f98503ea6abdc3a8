#pragma once
// The wgmma prefill attention (kernels/cuda/sm90a/sparse_attention_wgmma.cu, compiled for sm_90a
// only): sparse_attention() hands it the launches of CTAs of > 32 query rows without a key split
// (prefill with b_q >= 64) on an sm_90 device, when the build has it (HIPSTUDIO_HAVE_WGMMA).
#include <cuda_runtime.h>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

struct AttnArgs;

// Launches the wgmma kernel over `grid` CTAs (one per (batch, head, query block, row tile)); d_pad
// is the head dimension the kernel is built for (64 or 128, >= a.d).
void launch_sparse_attention_wgmma(const AttnArgs& a, ElementType dtype, int d_pad, unsigned grid, cudaStream_t stream);

}  // namespace hipstudio::gpu
