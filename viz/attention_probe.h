#pragma once
// Dense attention of one head computed from the float inputs, for hover readouts and the dense
// side of the side-by-side view. Plain C++ (float64 dots via kernels/dot_f64), no LibTorch.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "viz/heat_image.h"

namespace hipstudio::viz {

// Scaled score dot(q_i, k_j) / sqrt(d) and its causal softmax probability over keys [0, pos(i)].
struct ProbeValue {
  double score = 0;  // scaled by 1 / sqrt(d)
  double probability = 0;
  bool visible = false;
};

// One query row of one head, cached: the UI asks for (head, query) under the mouse every frame.
class AttentionProbe {
 public:
  ProbeValue at(const hip::AttentionInputs& in, int64_t head, int64_t query, int64_t key);

 private:
  const float* q_ = nullptr;
  int64_t head_ = -1, query_ = -1;
  std::vector<double> scores_;  // (pos + 1) scaled scores of the cached row
  double log_sum_ = 0;
};

// Dense causal probabilities of one query over keys [0, pos(query)] (the token view's row); the
// same scores and softmax as AttentionProbe. O(T d).
std::vector<double> dense_probability_row(const hip::AttentionInputs& in, int64_t head, int64_t query);

// Dense causal probabilities of `head` over all (tq, tk) cells, max-pooled to at most
// max_side x max_side texels (future cells NaN). O(tq tk d) work, meant for the worker thread.
HeatGrid dense_probability_image(const hip::AttentionInputs& in, int64_t head, int max_side);

}  // namespace hipstudio::viz
