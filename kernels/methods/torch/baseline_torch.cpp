// HiP's and the random baseline's tensor paths. HiP: on CUDA with the kernels built, the CUDA mask
// kernels (kernels/torch/hip_torch.h, float32: the reference's masks bit for bit; bf16 / f16 as
// the kernels take them); elsewhere the CPU reference on a host copy. Random: chosen on the host
// (it reads shapes and positions only, and its masks are defined by the host generator), copied
// to the inputs' device.
#include "kernels/methods/torch/tensor_method_mask.h"
#include "kernels/random_baseline.h"
#include "kernels/search_range.h"
#include "kernels/torch/hip_torch.h"

namespace hipstudio::hip::methods {

MethodMaskTensors hip_tensor_select(const TensorInputs& inputs, const SelectionContext& ctx, const MethodState*) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const HipParams& p = ctx.hip;
  if (inputs.q.is_cuda() && hip_torch::cuda_kernels_status().empty()) {
    const bool narrow = inputs.q.scalar_type() == at::kBFloat16 || inputs.q.scalar_type() == at::kHalf;
    const at::Tensor q = narrow ? inputs.q : inputs.q.to(at::kFloat), k = narrow ? inputs.k : inputs.k.to(at::kFloat);
    const hip_torch::MaskTensors m = hip_torch::estimate_masks(q.contiguous(), k.contiguous(), p, inputs.positions);
    return {m.blocks, m.counts, range_tensors(in, p, p.b_k).dense_from};
  }
  // A host copy as float32 (the reference's inputs), the search, the mask back on the device.
  const at::Tensor q = inputs.q.to(at::kCPU, at::kFloat).contiguous(), k = inputs.k.to(at::kCPU, at::kFloat).contiguous();
  AttentionInputs host = in.shape;
  host.q = q.data_ptr<float>();
  host.k = k.data_ptr<float>();
  MaskOptions options;
  options.threads = ctx.threads;
  return mask_tensors_of(estimate_masks_reference(host, p, options).mask, in.i64);
}

MethodMaskTensors random_tensor_select(const TensorInputs& inputs, const SelectionContext& ctx, const MethodState*) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const uint64_t seed = static_cast<uint64_t>(method_int(ctx.values, "random_seed")) + static_cast<uint64_t>(ctx.layer);
  return mask_tensors_of(random_masks(in.shape, ctx.hip, seed, ctx.threads), in.i64);
}

}  // namespace hipstudio::hip::methods
