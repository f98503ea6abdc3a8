#include "engine/views/reference_views.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "kernels/attention_metrics.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/sparse_attention_reference.h"

namespace hipstudio {

LayerMaskViews reference_layer_masks(const hip::AttentionInputs& in, const hip::HipParams& p, const ViewsMath& math,
                                     uint64_t seed, int64_t layer, int threads, bool with_oracle,
                                     const hip::methods::MethodChoice& method) {
  LayerMaskViews m;
  m.layer = layer;
  m.params = p;
  m.math = math;
  hip::MaskOptions options;
  options.threads = threads;
  m.method = method.name;
  m.hip = method.is_hip() ? hip::estimate_masks_reference(in, p, options).mask
                          : hip::methods::select_masks(hip::methods::find_selection_method(method.name), in,
                                                       hip::methods::choice_context(method, p, layer, threads));
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
  return hip::attention_mass(in, p, masks, threads, math.score);
}

LayerQuality unmeasured_layer_quality(int64_t layer, int64_t heads, const ViewsMath& math) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LayerQuality quality;
  quality.layer = layer;
  quality.math = math;
  quality.heads.assign(static_cast<size_t>(heads), HeadQuality{nan, nan, nan, nan, nan, nan});
  return quality;
}

LayerQuality reference_layer_quality(const hip::AttentionInputs& in, const LayerMaskViews& masks, int threads,
                                     bool random_scores) {
  if (masks.math.windowed()) return unmeasured_layer_quality(masks.layer, in.hq, masks.math);
  const hip::HipParams& p = masks.params;
  const hip::ScoreTransform& score = masks.math.score;
  const std::vector<double> recall = per_head_means(masks.recall, masks.hip);
  const std::vector<double> random_recall = per_head_means(masks.random_recall, masks.hip);
  std::vector<const hip::MaskResult*> measured{&masks.hip};
  if (random_scores) measured.push_back(&masks.random);
  const std::vector<hip::AttentionMass> mass = reference_attention_mass(in, p, masks.math, measured, threads);
  const hip::AttentionOutput dense = hip::dense_attention_reference(in, p, 0, score);
  const std::vector<double> err =
      hip::output_relative_error(hip::sparse_attention_reference(in, p, masks.hip, 0, score), dense);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> random_err =
      random_scores ? hip::output_relative_error(hip::sparse_attention_reference(in, p, masks.random, 0, score), dense)
                    : std::vector<double>(static_cast<size_t>(in.hq), nan);

  LayerQuality quality;
  quality.layer = masks.layer;
  quality.math = masks.math;
  for (int64_t h = 0; h < in.hq; ++h) {
    HeadQuality head;
    head.recall = recall[h];
    head.random_recall = random_recall[h];
    head.mass = mass[0].per_head[h];
    head.random_mass = random_scores ? mass[1].per_head[h] : nan;
    head.out_rel_err = err[h];
    head.random_out_rel_err = random_err[h];
    quality.heads.push_back(head);
  }
  return quality;
}

}  // namespace hipstudio
