#include <cmath>

#include <ATen/ATen.h>

#include "engine/model/attention_backend.h"

namespace hipstudio {

at::Tensor DenseAttention::attend(const AttentionCall& call) {
  const int64_t heads = call.q.size(0), T = call.q.size(1), dim = call.q.size(2);
  const int64_t kv_heads = call.k.size(0), keys = call.k.size(1), group = heads / kv_heads;
  // The query heads of one KV group share its keys: fold them into the row dimension.
  at::Tensor q = call.q.reshape({kv_heads, group * T, dim});
  at::Tensor scores = at::matmul(q, call.k.transpose(1, 2)).to(at::kFloat);  // [kv_heads, group*T, keys]
  scores.mul_(1.0 / std::sqrt(static_cast<double>(dim)));
  if (T > 1) {
    // Row i (position first_position + i) must not see keys after itself.
    at::Tensor row_pos = at::arange(call.first_position, call.first_position + T, scores.options().dtype(at::kLong));
    at::Tensor key_pos = at::arange(keys, row_pos.options());
    at::Tensor future = key_pos.unsqueeze(0) > row_pos.unsqueeze(1);  // [T, keys]
    scores = scores.view({kv_heads, group, T, keys})
                 .masked_fill(future, -std::numeric_limits<float>::infinity())
                 .view({kv_heads, group * T, keys});
  }
  at::Tensor probs = at::softmax(scores, -1).to(call.v.scalar_type());
  return at::matmul(probs, call.v).view({heads, T, dim});
}

}  // namespace hipstudio
