#pragma once
// `hipstudio bench mask --device cuda`: the CUDA kernels' mask estimation against the dense score
// product on the GPU, over the same sizes and parameters as the CPU reference's table.
#include "kernels/mask_bench.h"

namespace hipstudio::app {

// Throws InputError (via require_cuda_kernels) where there are no CUDA kernels or no GPU.
void run_bench_mask_cuda(const hip::MaskBenchOptions& options);

}  // namespace hipstudio::app
