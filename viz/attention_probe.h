#pragma once
// Dense attention of one head computed from the float inputs, for hover readouts and the dense
// side of the side-by-side view. Plain C++ (float64 dots via kernels/dot_f64), no LibTorch. Each
// call takes the layer's attention rule: its score transform (kernels/score_transform.h: scale and
// soft-cap) and its sliding window (0: full causal attention), so a windowed or soft-capped layer
// shows the probabilities its forward pass computes.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/attention_rule.h"
#include "viz/heat_image.h"

namespace hipstudio::viz {

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

// Dense probabilities of `head` over all (tq, tk) cells, max-pooled to at most max_side x max_side
// texels (cells no visible key reaches NaN). O(tq tk d) work, meant for the worker thread.
HeatGrid dense_probability_image(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int max_side);

}  // namespace hipstudio::viz
