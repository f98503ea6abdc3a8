#pragma once
// The dense-probability view, one rule for every caller: dense attention of one head from the float
// inputs, for hover readouts (the mask canvas, Side by side, the token view) and the dense side of
// Side by side, whose image the device pools cell for cell the same way
// (engine/analysis/device_dense_image.h; a gpu test compares). The float64 reference: plain C++
// (float64 dots via kernels/dot_f64), no LibTorch. Each call takes the layer's attention rule: its
// score transform (kernels/score_transform.h: scale and soft-cap) and its sliding window (0: full
// causal attention), so a windowed or soft-capped layer shows the probabilities its forward pass
// computes.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/attention_rule.h"

namespace hipstudio {

using DenseRule = hip::AttentionRule;

// The logit of key j for query i under the rule and its softmax probability over the visible keys.
struct ProbeValue {
  double score = 0;  // scaled (and capped where the rule caps)
  double probability = 0;
  bool visible = false;  // false: a future key, or one before the window
};

// One query row of one head, cached: the UI asks for (head, query) under the mouse every frame.
class AttentionProbe {
 public:
  ProbeValue at(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int64_t query, int64_t key);

 private:
  const float* q_ = nullptr;
  DenseRule rule_;
  int64_t head_ = -1, query_ = -1;
  std::vector<double> scores_;  // (pos + 1) logits of the cached row; keys before the window -inf
  double log_sum_ = 0;
};

// Dense probabilities of one query over keys [0, pos(query)] (the token view's row; 0 before the
// window); the same scores and softmax as AttentionProbe. O(T d).
std::vector<double> dense_probability_row(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int64_t query);

// A max-pooled probability image: (rows, cols) row-major texels, each the max of its cells'
// probabilities, NaN where no visible key falls in it. Query i goes to row i rows / tq, key j to
// column j cols / tk.
struct DenseImage {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols)
};

// Dense probabilities of `head` over all (tq, tk) cells, max-pooled to at most max_side x max_side
// texels. O(tq tk d) work, meant for the worker thread.
DenseImage dense_probability_image(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int max_side);

// The image's colour scale: the largest probability and the 99.5th percentile of the texels (the
// colour saturates there, so one sink token does not leave the rest of the image dark); 0 without
// values.
struct DenseImageScale {
  float max_prob = 0, scale_max = 0;
};
DenseImageScale dense_image_scale(const std::vector<float>& values);

}  // namespace hipstudio
