#pragma once
// How attention turns a dot product into a softmax logit, shared by the CPU reference
// (sparse_attention_reference.h) and the CUDA kernels (cuda/hip_cuda.h, AttentionLaunch):
//   s = scale * dot(q, k)               scale 0: 1 / sqrt(d)
//   s -> softcap * tanh(s / softcap)    softcap > 0 only (Gemma 2's attn_logit_softcapping)
// The defaults are plain attention, computed with the same arithmetic (and bits) as before the
// transform existed. Both are monotonic in the dot product, so HiP's mask search, which ranks raw
// dot products, selects the same blocks with or without them.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hipstudio::hip {

struct ScoreTransform {
  double scale = 0.0;
  double softcap = 0.0;
};

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
