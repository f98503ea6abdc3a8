#pragma once
// Attention inputs that carry shapes only, for the code that reads nothing else.
#include <cstdint>

#include "kernels/attention_inputs.h"

namespace hipstudio::hip {

// Inputs with shapes only (data pointers at a dummy): for what reads nothing else, such as the
// random baseline, empty masks of the right shape and the key sets of a selection.
inline AttentionInputs shape_only_inputs(int64_t hq, int64_t hkv, int64_t tq, int64_t tk, int64_t d) {
  static const float unused = 0.0f;
  AttentionInputs in;
  in.q = in.k = in.v = &unused;
  in.hq = hq;
  in.hkv = hkv;
  in.tq = tq;
  in.tk = tk;
  in.d = d;
  return in;
}

}  // namespace hipstudio::hip
