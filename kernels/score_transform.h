#pragma once
// How attention turns a dot product into a softmax logit, shared by the CPU reference
// (sparse_attention_reference.h) and the CUDA kernels (cuda/hip_cuda.h, AttentionLaunch):
//   s = scale * dot(q, k)               scale 0: 1 / sqrt(d)
//   s -> softcap * tanh(s / softcap)    softcap > 0 only (Gemma 2's attn_logit_softcapping)
// The defaults are plain attention, dot / sqrt(d) to the bit. Both are monotonic in the dot
// product, so HiP's mask search, which ranks raw dot products, selects the same blocks with or
// without them. A sliding-window layer (window W > 0, Gemma 2 / 3, Mistral) also hides keys: the
// row at position p sees keys (p - W, p], first_visible_key below.
#include <cmath>
#include <cstdint>

namespace hipstudio::hip {

struct ScoreTransform {
  double scale = 0.0;
  double softcap = 0.0;
};

// The scale a row's dot products are multiplied by: t.scale, or 1 / sqrt(d) for scale 0.
inline double score_scale(const ScoreTransform& t, int64_t d) {
  return t.scale > 0.0 ? t.scale : 1.0 / std::sqrt(static_cast<double>(d));
}

// The float64 logit of one dot product, `scale` from score_scale: the rule above, one multiplication
// and (softcap > 0) the tanh cap, so that plain attention is dot * (1 / sqrt(d)) to the bit.
inline double score_logit(double dot, double scale, const ScoreTransform& t) {
  const double s = dot * scale;
  return t.softcap > 0.0 ? t.softcap * std::tanh(s / t.softcap) : s;
}

// The first key the row at `position` sees under a sliding window of `window` keys (0: full causal
// attention, every key from 0): max(0, position - window + 1).
constexpr int64_t first_visible_key(int64_t position, int64_t window) {
  return window > 0 ? (position - window + 1 > 0 ? position - window + 1 : 0) : 0;
}

}  // namespace hipstudio::hip
