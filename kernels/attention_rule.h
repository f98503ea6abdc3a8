#pragma once
// A layer's attention rule in plain C++ (no LibTorch, no CUDA): how a dot product becomes a logit
// (kernels/score_transform.h's ScoreTransform) and which keys a query sees (its sliding window).
// The float64 references and every dense view (viz/attention_probe.h, the device image, the views
// layer) compute with these helpers, so a windowed or soft-capped layer reads the same everywhere.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/score_transform.h"

namespace hipstudio::hip {

// The factor s = scale * dot uses at head_dim d.
inline double score_scale(const ScoreTransform& t, int64_t d) {
  return t.scale > 0.0 ? t.scale : 1.0 / std::sqrt(static_cast<double>(d));
}

// The logit of a scaled score s: s itself, or softcap * tanh(s / softcap).
inline double capped_score(const ScoreTransform& t, double s) {
  return t.softcap > 0.0 ? t.softcap * std::tanh(s / t.softcap) : s;
}

// The first key a query at `position` sees under a sliding window of `window` keys (transformers'
// sliding-window mask: keys (position - window, position]); window 0: full causal attention, key 0.
inline int64_t first_visible_key(int64_t position, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, position - window + 1) : 0;
}

// A layer's attention rule as every dense view computes it from q and k: the logit
// capped_score(score, score_scale * dot) over the keys [first_visible_key(p, window), p] of the
// query at position p. Default: plain causal attention.
struct AttentionRule {
  int64_t window = 0;    // 0: full causal attention; W > 0: the row at p sees keys (p - W, p]
  ScoreTransform score;  // scale 0: 1 / sqrt(head_dim); softcap 0: none
  bool windowed() const { return window > 0; }
  bool operator==(const AttentionRule& o) const {
    return window == o.window && score.scale == o.score.scale && score.softcap == o.score.softcap;
  }
};

}  // namespace hipstudio::hip
