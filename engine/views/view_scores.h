#pragma once
// The softmax logit of one dot product under a layer's ViewsMath, as the views' float64 reference
// forms it: kernels/score_transform.h's rule, s = scale * dot (scale 0: 1 / sqrt(d)), then
// s -> softcap * tanh(s / softcap) for softcap > 0; the same multiplication as
// kernels/attention_metrics.cpp's and kernels/sparse_attention_reference.cpp's, so that plain maths
// gives their bits.
#include <cmath>
#include <cstdint>

#include "kernels/score_transform.h"

namespace hipstudio {

inline double view_scale(const hip::ScoreTransform& t, int64_t d) {
  return t.scale > 0.0 ? t.scale : 1.0 / std::sqrt(static_cast<double>(d));
}

inline double view_logit(double dot, double scale, const hip::ScoreTransform& t) {
  const double s = dot * scale;
  return t.softcap > 0.0 ? t.softcap * std::tanh(s / t.softcap) : s;
}

}  // namespace hipstudio
