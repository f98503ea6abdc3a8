#include "kernels/sparse_attention_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/dot_f64.h"
#include "kernels/key_set.h"
#include "kernels/parallel_for.h"
#include "kernels/score_logit.h"
#include "kernels/search_range.h"

namespace hipstudio::hip {
namespace {

struct Scratch {
  std::vector<int64_t> keys;
  std::vector<double> w;
};

// Softmax-weighted sum of V over `keys` (ascending) for query row (h, i), into out (d values).
void attend(const AttentionInputs& in, int64_t h, int64_t i, const std::vector<int64_t>& keys, const ScoreTransform& t,
            Scratch& s, double* out) {
  const int64_t d = in.d;
  std::fill(out, out + d, 0.0);
  if (keys.empty()) return;  // cannot happen for a valid query (it always sees itself or the sink)
  const int64_t g = kv_head(in, h);
  const float* q = q_row(in, h, i);
  const double scale = score_scale(t, d);
  s.w.resize(keys.size());
  double mx = -INFINITY;
  for (size_t j = 0; j < keys.size(); ++j) {
    s.w[j] = score_logit(dot_f64(q, k_row(in, g, keys[j]), d), scale, t);
    mx = std::max(mx, s.w[j]);
  }
  double sum = 0;
  for (size_t j = 0; j < keys.size(); ++j) {
    s.w[j] = std::exp(s.w[j] - mx);
    sum += s.w[j];
  }
  for (size_t j = 0; j < keys.size(); ++j) {
    const double w = s.w[j] / sum;
    const float* v = v_row(in, g, keys[j]);
    for (int64_t c = 0; c < d; ++c) out[c] += w * static_cast<double>(v[c]);
  }
}

AttentionOutput make_output(const AttentionInputs& in) {
  AttentionOutput o;
  o.heads = in.hq;
  o.tq = in.tq;
  o.d = in.d;
  o.out.assign(static_cast<size_t>(in.hq * in.tq * in.d), 0.0);
  return o;
}

}  // namespace

void check_mask_shape(const AttentionInputs& in, const HipParams& p, const MaskResult& mask) {
  if (mask.heads != in.hq || mask.query_blocks != query_blocks(in, p) || mask.kb != hip_kb(p) ||
      mask.blocks.size() != static_cast<size_t>(mask.heads * mask.query_blocks * mask.kb) ||
      mask.counts.size() != static_cast<size_t>(mask.heads * mask.query_blocks) ||
      mask.dense_from.size() != static_cast<size_t>(mask.query_blocks)) {
    throw std::invalid_argument("mask shape (" + std::to_string(mask.heads) + " heads, " +
                                std::to_string(mask.query_blocks) + " query blocks, kb " + std::to_string(mask.kb) +
                                ") does not match the inputs and parameters");
  }
}

AttentionOutput sparse_attention_reference(const AttentionInputs& in, const HipParams& p, const MaskResult& mask,
                                           int threads, const ScoreTransform& score) {
  validate_hip_params(p);
  validate_attention_inputs(in, true);
  check_mask_shape(in, p, mask);
  AttentionOutput o = make_output(in);
  const int64_t items = in.hq * in.tq;
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(items, threads)));
  parallel_for(items, threads, [&](int64_t item, int worker) {
    const int64_t h = item / in.tq, i = item % in.tq;
    Scratch& s = scratch[worker];
    attended_keys(in, p, mask, h, i, s.keys);
    attend(in, h, i, s.keys, score, s, o.out.data() + item * in.d);
  });
  return o;
}

AttentionOutput dense_attention_reference(const AttentionInputs& in, const HipParams& p, int threads,
                                          const ScoreTransform& score) {
  validate_attention_inputs(in, true);
  AttentionOutput o = make_output(in);
  const int64_t items = in.hq * in.tq;
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(items, threads)));
  parallel_for(items, threads, [&](int64_t item, int worker) {
    const int64_t h = item / in.tq, i = item % in.tq;
    Scratch& s = scratch[worker];
    s.keys.resize(static_cast<size_t>(visible_end(in, p, i) + 1));
    for (size_t j = 0; j < s.keys.size(); ++j) s.keys[j] = static_cast<int64_t>(j);
    attend(in, h, i, s.keys, score, s, o.out.data() + item * in.d);
  });
  return o;
}

}  // namespace hipstudio::hip
