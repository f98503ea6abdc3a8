#pragma once
// One element of the decode step's rotary embedding, in the one form both of its GPU writers use:
// the RoPE and cache-write kernel (rope_cache.h) and HiP's cached-step attention that does that
// kernel's work itself (AttentionLaunch::rope_table). Both round alike, so that a decode graph that
// folds the rotation into the attention gives the same logits as an eager step that does not.
#include "kernels/cuda/common.cuh"

namespace hipstudio::gpu {

// engine/model/rope.cpp's rotate_rows: addcmul(x * cos, roll(x, head_dim / 2), sin), the product
// x * cos rounded to T first; `partner` is x's element half a head away, `sin` the table's sin row
// entry (its first half negated).
template <class T>
__device__ __forceinline__ T rotate_element(float x, float partner, float cos, float sin) {
  const float a = to_f32(from_f32<T>(x * cos));
  return from_f32<T>(a + partner * sin);
}

}  // namespace hipstudio::gpu
