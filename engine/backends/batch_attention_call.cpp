#include <ATen/ATen.h>

#include "engine/backends/attention_backend.h"

namespace hipstudio {

AttentionCall BatchAttentionCall::alone(int64_t i) const {
  const size_t s = static_cast<size_t>(i);
  AttentionCall call;
  call.layer = layer;
  call.math = math;
  call.q = q[i].contiguous();  // [n_heads, 1, head_dim], as a batch-1 step hands it
  call.k = k.narrow(1, starts.at(s), positions.at(s) + 1);
  call.v = v.narrow(1, starts.at(s), positions.at(s) + 1);
  call.first_position = positions.at(s);
  call.decoding = true;
  return call;
}

}  // namespace hipstudio
