#include <cmath>

#include <ATen/ATen.h>

#include "engine/model/attention_backend.h"

namespace hipstudio {

at::Tensor DenseAttention::attend(const AttentionCall& call) {
  const int64_t heads = call.q.size(0), T = call.q.size(1), dim = call.q.size(2);
  const int64_t kv_heads = call.k.size(0), keys = call.k.size(1), group = heads / kv_heads;
  // The query heads of one KV group share its keys: fold them into the row dimension.
  // float32 on the CPU is accumulated in float64: attention is a small share of the work there and
  // this keeps dense and the float64 HiP reference comparable to 1e-5 on the logits.
  const at::ScalarType work = call.q.is_cpu() && call.q.scalar_type() == at::kFloat ? at::kDouble : at::kFloat;
  at::Tensor q = call.q.reshape({kv_heads, group * T, dim}).to(work);
  at::Tensor scores = at::matmul(q, call.k.to(work).transpose(1, 2));  // [kv_heads, group*T, keys]
  scores.mul_(1.0 / std::sqrt(static_cast<double>(dim)));
  if (T > 1) {
    // Row i (position first_position + i) must not see keys after itself.
    at::Tensor row_pos = at::arange(call.first_position, call.first_position + T, scores.options().dtype(at::kLong));
    at::Tensor key_pos = at::arange(keys, row_pos.options());
    at::Tensor future = key_pos.unsqueeze(0) > row_pos.unsqueeze(1);  // [T, keys]
    scores = scores.view({kv_heads, group, T, keys})
                 .masked_fill(future, -std::numeric_limits<double>::infinity())
                 .view({kv_heads, group * T, keys});
  }
  at::Tensor probs = at::softmax(scores, -1);
  if (work == at::kDouble) return at::matmul(probs, call.v.to(work)).to(call.v.scalar_type()).view({heads, T, dim});
  return at::matmul(probs.to(call.v.scalar_type()), call.v).view({heads, T, dim});
}

}  // namespace hipstudio
