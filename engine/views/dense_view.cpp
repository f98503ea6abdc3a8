#include "engine/views/dense_view.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/dot_f64.h"

namespace hipstudio {

namespace {

// Logits of row `query` over [0, pos] (-inf before the window); returns their log-sum-exp.
double row_scores(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int64_t query, std::vector<double>& s) {
  const int64_t pos = hip::query_position(in, query);
  const int64_t first = hip::first_visible_key(pos, rule.window);
  const float* q = hip::q_row(in, head, query);
  const int64_t g = hip::kv_head(in, head);
  const double scale = hip::score_scale(rule.score, in.d);
  s.assign(static_cast<size_t>(pos + 1), -std::numeric_limits<double>::infinity());
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = first; j <= pos; ++j) {
    const double v = hip::score_logit(hip::dot_f64(q, hip::k_row(in, g, j), in.d), scale, rule.score);
    s[static_cast<size_t>(j)] = v;
    mx = std::max(mx, v);
  }
  double sum = 0;
  for (int64_t j = first; j <= pos; ++j) sum += std::exp(s[static_cast<size_t>(j)] - mx);
  return mx + std::log(sum);
}

}  // namespace

ProbeValue AttentionProbe::at(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int64_t query, int64_t key) {
  ProbeValue v;
  if (head < 0 || head >= in.hq || query < 0 || query >= in.tq || key < 0 || key >= in.tk) return v;
  const int64_t pos = hip::query_position(in, query);
  if (key > pos || key < hip::first_visible_key(pos, rule.window)) return v;
  if (in.q != q_ || !(rule == rule_) || head != head_ || query != query_) {
    log_sum_ = row_scores(in, rule, head, query, scores_);
    q_ = in.q;
    rule_ = rule;
    head_ = head;
    query_ = query;
  }
  v.visible = true;
  v.score = scores_[static_cast<size_t>(key)];
  v.probability = std::exp(v.score - log_sum_);
  return v;
}

std::vector<double> dense_probability_row(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int64_t query) {
  std::vector<double> s;
  if (head < 0 || head >= in.hq || query < 0 || query >= in.tq) return s;
  const double lse = row_scores(in, rule, head, query, s);
  for (double& v : s) v = std::exp(v - lse);
  return s;
}

DenseImage dense_probability_image(const hip::AttentionInputs& in, const DenseRule& rule, int64_t head, int max_side) {
  const int width = static_cast<int>(std::min<int64_t>(in.tk, max_side));
  const int height = static_cast<int>(std::min<int64_t>(in.tq, max_side));
  DenseImage out;
  out.rows = height;
  out.cols = width;
  out.values.assign(static_cast<size_t>(width) * static_cast<size_t>(height), std::numeric_limits<float>::quiet_NaN());
  std::vector<double> s;
  for (int64_t i = 0; i < in.tq; ++i) {
    const double lse = row_scores(in, rule, head, i, s);
    float* line = out.values.data() + static_cast<size_t>(i * height / in.tq) * static_cast<size_t>(width);
    for (size_t j = static_cast<size_t>(hip::first_visible_key(hip::query_position(in, i), rule.window)); j < s.size(); ++j) {
      const auto p = static_cast<float>(std::exp(s[j] - lse));
      float& t = line[static_cast<int64_t>(j) * width / in.tk];
      if (std::isnan(t) || p > t) t = p;
    }
  }
  return out;
}

DenseImageScale dense_image_scale(const std::vector<float>& values) {
  DenseImageScale s;
  std::vector<float> vals;
  for (float v : values)
    if (v == v) vals.push_back(v), s.max_prob = std::max(s.max_prob, v);
  if (!vals.empty()) {
    const size_t k = std::min(vals.size() - 1, vals.size() * 995 / 1000);
    std::nth_element(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(k), vals.end());
    s.scale_max = vals[k];
  }
  return s;
}

}  // namespace hipstudio
