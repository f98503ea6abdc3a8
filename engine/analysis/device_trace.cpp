#include "engine/analysis/device_trace.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/analysis/kept_inputs.h"
#include "kernels/search_range.h"
#include "kernels/shape_only_inputs.h"
#include "kernels/torch/hip_torch.h"

namespace hipstudio {

std::optional<DeviceTrace> trace_on_device(const LayerInputs& inputs, const hip::HipParams& p, int64_t head,
                                           int64_t query_block) {
  const auto* kept = dynamic_cast<const TensorLayerInputs*>(inputs.source());
  if (!kept || !kept->q().is_cuda()) return std::nullopt;
  c10::InferenceMode inference;
  const at::Tensor& q = kept->q();
  const at::Tensor& k = kept->k();
  DeviceTrace out;
  out.trace = hip_torch::estimate_masks_traced(q, k, p, head, query_block).second;
  // The oracle's block scores (kernels/oracle.cpp): per key block of the search range, the best
  // score of its keys against the block's sampled query rows (every b_sq-th).
  const hip::AttentionInputs shape = hip::shape_only_inputs(inputs.heads, inputs.kv_heads, inputs.tokens, inputs.tokens, inputs.dim);
  const hip::SearchRange sr = hip::search_range(shape, p, query_block);
  if (sr.blocks() <= 0) return out;
  const bool exact = q.scalar_type() == at::kFloat || q.scalar_type() == at::kDouble;
  const auto type = exact ? at::kDouble : at::kFloat;
  const at::Tensor rows = q[head].slice(0, sr.row_begin, sr.row_end, p.b_sq).to(type);
  const at::Tensor keys = k[hip::kv_head(shape, head)].slice(0, sr.lo * p.b_k, sr.hi * p.b_k).to(type);
  const at::Tensor best = std::get<0>(at::matmul(rows, keys.t()).max(0)).view({sr.blocks(), p.b_k}).amax(1);
  const at::Tensor host = best.to(at::kCPU, at::kDouble).contiguous();
  out.oracle_scores.assign(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
  return out;
}

}  // namespace hipstudio
