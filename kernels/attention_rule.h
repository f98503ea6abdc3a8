#pragma once
// A layer's attention rule as one value in plain C++ (no LibTorch, no CUDA): its score transform
// and its sliding window, read with kernels/score_logit.h's helpers. Every dense view
// (viz/attention_probe.h, the device image, the views layer) takes it, so a windowed or soft-capped
// layer reads the same everywhere.
#include <cstdint>

#include "kernels/score_logit.h"

namespace hipstudio::hip {

// A layer's attention rule as every dense view computes it from q and k: the logit
// score_logit(dot, score_scale(score, d), score) over the keys [first_visible_key(p, window), p] of the
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
