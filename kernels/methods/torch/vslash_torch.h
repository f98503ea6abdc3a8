#pragma once
// Step 4 of MInference's vertical-slash rule (Jiang et al. 2024; kernels/methods/vslash.h) on
// tensors, in its two forms, both giving the CPU reference's masks exactly: the CUDA kernel
// (kernels/cuda/vslash_blocks.h), which vslash's tensor implementation uses wherever it takes the
// shape, and the LibTorch ops, used everywhere else (CPU tensors, a build without the CUDA kernels,
// ranges beyond the kernel's shared memory). Both are declared here so that a test can run each on
// the same device.
#include <optional>

#include "kernels/methods/torch/tensor_method_mask.h"
#include "kernels/methods/vslash.h"

namespace hipstudio::hip::methods {

// Per head and chunk of query blocks: a (query blocks, tk) byte table of the selected tokens by
// scatter, counted per b_k block, ranked by rank_blocks.
MethodMaskTensors vslash_blocks_by_tensor_ops(const CheckedInputs& in, const HipParams& p, const VslashState& state);

// The kernel's masks, or nothing where it does not take the inputs (not on CUDA, the kernels not
// built, or a shape vslash_blocks_fit refuses).
std::optional<MethodMaskTensors> vslash_blocks_by_kernel(const CheckedInputs& in, const HipParams& p,
                                                         const VslashState& state);

}  // namespace hipstudio::hip::methods
