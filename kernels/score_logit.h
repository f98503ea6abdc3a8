#pragma once
// The float64 form of kernels/score_transform.h's rule, shared by the CPU references (the views'
// attention mass in attention_metrics.cpp, sparse and dense attention in
// sparse_attention_reference.cpp) and the views' tensor tiles (their scale): one place that says
// how a dot product becomes a logit, and which keys a sliding-window row sees.
#include <cmath>
#include <cstdint>

#include "kernels/score_transform.h"

namespace hipstudio::hip {

// The scale a row's dot products are multiplied by: t.scale, or 1 / sqrt(d) for scale 0.
inline double score_scale(const ScoreTransform& t, int64_t d) {
  return t.scale > 0.0 ? t.scale : 1.0 / std::sqrt(static_cast<double>(d));
}

// The logit of one dot product, `scale` from score_scale: one multiplication and (softcap > 0) the
// tanh cap, so that plain attention is dot * (1 / sqrt(d)) to the bit.
inline double score_logit(double dot, double scale, const ScoreTransform& t) {
  const double s = dot * scale;
  return t.softcap > 0.0 ? t.softcap * std::tanh(s / t.softcap) : s;
}

// The first key the row at `position` sees under a sliding window of `window` keys (Gemma 2 / 3,
// Mistral: the row at p sees keys (p - W, p]); 0 for full causal attention (window 0).
constexpr int64_t first_visible_key(int64_t position, int64_t window) {
  return window > 0 && position - window + 1 > 0 ? position - window + 1 : 0;
}

}  // namespace hipstudio::hip
