#pragma once
// How attention turns a dot product into a softmax logit, shared by the CPU reference
// (sparse_attention_reference.h) and the CUDA kernels (cuda/hip_cuda.h, AttentionLaunch):
//   s = scale * dot(q, k)               scale 0: 1 / sqrt(d)
//   s -> softcap * tanh(s / softcap)    softcap > 0 only (Gemma 2's attn_logit_softcapping)
// The defaults are plain attention, computed with the same arithmetic (and bits) as before the
// transform existed. Both are monotonic in the dot product, so HiP's mask search, which ranks raw
// dot products, selects the same blocks with or without them.
namespace hipstudio::hip {

struct ScoreTransform {
  double scale = 0.0;
  double softcap = 0.0;
};

}  // namespace hipstudio::hip
