// StreamingLLM's rule (streaming.cpp) on tensors: block j of the range scores j, so the best
// min(k / b_k, hi - lo) are the most recent; the same for every head.
#include "kernels/methods/torch/tensor_method_mask.h"

namespace hipstudio::hip::methods {

MethodMaskTensors streaming_tensor_select(const TensorInputs& inputs, const SelectionContext& ctx, const MethodState*) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const HipParams& p = ctx.hip;
  const RangeTensors r = range_tensors(in, p, p.b_k);
  const int64_t n = in.shape.tk / p.b_k;
  const at::Tensor scores = at::arange(n, in.f64).unsqueeze(0).expand({r.hi.size(0), n}).unsqueeze(0);
  auto [blocks, counts] = rank_blocks_in_ranges(scores, r.lo, r.hi, p.k / p.b_k, p.b_k, p);
  return {blocks.expand({in.shape.hq, -1, -1}).contiguous(), counts.expand({in.shape.hq, -1}).contiguous(),
          r.dense_from};
}

}  // namespace hipstudio::hip::methods
