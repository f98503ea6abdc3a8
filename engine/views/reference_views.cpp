#include "engine/views/reference_views.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "engine/views/view_scores.h"
#include "kernels/dot_f64.h"
#include "kernels/key_set.h"
#include "kernels/oracle.h"
#include "kernels/parallel_for.h"
#include "kernels/random_baseline.h"
#include "kernels/sparse_attention_reference.h"

namespace hipstudio {

LayerMaskViews reference_layer_masks(const hip::AttentionInputs& in, const hip::HipParams& p, const ViewsMath& math,
                                     uint64_t seed, int64_t layer, int threads, bool with_oracle) {
  LayerMaskViews m;
  m.layer = layer;
  m.params = p;
  m.math = math;
  hip::MaskOptions options;
  options.threads = threads;
  m.hip = hip::estimate_masks_reference(in, p, options).mask;
  m.has_oracle = with_oracle;
  if (!with_oracle) return m;
  m.oracle = hip::oracle_masks(in, p, threads);
  m.random = hip::random_masks(in, p, layer_random_seed(seed, layer));
  m.recall = hip::mask_recall(m.hip, m.oracle);
  m.random_recall = hip::mask_recall(m.random, m.oracle);
  return m;
}

std::vector<double> per_head_means(const std::vector<double>& per_block, const hip::MaskResult& shape) {
  return hip::mean_per_head(per_block, shape.heads, shape.query_blocks);
}

std::vector<hip::AttentionMass> reference_attention_mass(const hip::AttentionInputs& in, const hip::HipParams& p,
                                                         const ViewsMath& math,
                                                         const std::vector<const hip::MaskResult*>& masks,
                                                         int threads) {
  if (math.windowed()) throw std::logic_error("views: a windowed layer has no HiP attention mass");
  hip::validate_hip_params(p);
  hip::validate_attention_inputs(in, false);
  for (const hip::MaskResult* m : masks) hip::check_mask_shape(in, p, *m);
  std::vector<hip::AttentionMass> result(masks.size());
  for (hip::AttentionMass& r : result) {
    r.heads = in.hq;
    r.tq = in.tq;
    r.per_query.assign(static_cast<size_t>(in.hq * in.tq), 0.0);
  }
  struct Scratch {
    std::vector<double> prob;
    std::vector<int64_t> keys;
  };
  const int64_t items = in.hq * in.tq;
  std::vector<Scratch> scratch(static_cast<size_t>(hip::parallel_workers(items, threads)));
  const double scale = view_scale(math.score, in.d);
  hip::parallel_for(items, threads, [&](int64_t item, int worker) {
    const int64_t h = item / in.tq, i = item % in.tq;
    Scratch& s = scratch[static_cast<size_t>(worker)];
    const int64_t e = hip::visible_end(in, p, i);
    const int64_t g = hip::kv_head(in, h);
    const float* q = hip::q_row(in, h, i);
    s.prob.resize(static_cast<size_t>(e + 1));
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j <= e; ++j) {
      s.prob[j] = view_logit(hip::dot_f64(q, hip::k_row(in, g, j), in.d), scale, math.score);
      mx = std::max(mx, s.prob[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j <= e; ++j) {
      s.prob[j] = std::exp(s.prob[j] - mx);
      sum += s.prob[j];
    }
    for (size_t m = 0; m < masks.size(); ++m) {
      hip::attended_keys(in, p, *masks[m], h, i, s.keys);
      double mass = 0;
      for (int64_t key : s.keys) mass += s.prob[key];
      result[m].per_query[item] = mass / sum;
    }
  });
  for (hip::AttentionMass& r : result) {
    r.per_head.assign(static_cast<size_t>(in.hq), 0.0);
    for (int64_t h = 0; h < in.hq; ++h) {
      double total = 0;
      for (int64_t i = 0; i < in.tq; ++i) total += r.per_query[h * in.tq + i];
      r.per_head[h] = total / static_cast<double>(in.tq);
    }
  }
  return result;
}

LayerQuality unmeasured_layer_quality(int64_t layer, int64_t heads, const ViewsMath& math) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LayerQuality quality;
  quality.layer = layer;
  quality.math = math;
  quality.heads.assign(static_cast<size_t>(heads), HeadQuality{nan, nan, nan, nan, nan, nan});
  return quality;
}

LayerQuality reference_layer_quality(const hip::AttentionInputs& in, const LayerMaskViews& masks, int threads) {
  if (masks.math.windowed()) return unmeasured_layer_quality(masks.layer, in.hq, masks.math);
  const hip::HipParams& p = masks.params;
  const hip::ScoreTransform& score = masks.math.score;
  const std::vector<double> recall = per_head_means(masks.recall, masks.hip);
  const std::vector<double> random_recall = per_head_means(masks.random_recall, masks.hip);
  const std::vector<hip::AttentionMass> mass = reference_attention_mass(in, p, masks.math, {&masks.hip, &masks.random}, threads);
  const hip::AttentionOutput dense = hip::dense_attention_reference(in, p, 0, score);
  const std::vector<double> err =
      hip::output_relative_error(hip::sparse_attention_reference(in, p, masks.hip, 0, score), dense);
  const std::vector<double> random_err =
      hip::output_relative_error(hip::sparse_attention_reference(in, p, masks.random, 0, score), dense);

  LayerQuality quality;
  quality.layer = masks.layer;
  quality.math = masks.math;
  for (int64_t h = 0; h < in.hq; ++h) {
    HeadQuality head;
    head.recall = recall[h];
    head.random_recall = random_recall[h];
    head.mass = mass[0].per_head[h];
    head.random_mass = mass[1].per_head[h];
    head.out_rel_err = err[h];
    head.random_out_rel_err = random_err[h];
    quality.heads.push_back(head);
  }
  return quality;
}

}  // namespace hipstudio
