#include "kernels/attention_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/dot_f64.h"
#include "kernels/key_set.h"
#include "kernels/parallel_for.h"
#include "kernels/score_logit.h"
#include "kernels/search_range.h"

namespace hipstudio::hip {

std::vector<AttentionMass> attention_mass(const AttentionInputs& in, const HipParams& p,
                                          const std::vector<const MaskResult*>& masks, int threads,
                                          const ScoreTransform& score) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  for (const MaskResult* m : masks) check_mask_shape(in, p, *m);
  std::vector<AttentionMass> result(masks.size());
  for (AttentionMass& r : result) {
    r.heads = in.hq;
    r.tq = in.tq;
    r.per_query.assign(static_cast<size_t>(in.hq * in.tq), 0.0);
  }
  struct Scratch {
    std::vector<double> prob;
    std::vector<int64_t> keys;
  };
  const int64_t items = in.hq * in.tq;
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(items, threads)));
  const double scale = score_scale(score, in.d);
  parallel_for(items, threads, [&](int64_t item, int worker) {
    const int64_t h = item / in.tq, i = item % in.tq;
    Scratch& s = scratch[worker];
    const int64_t e = visible_end(in, p, i);
    const int64_t g = kv_head(in, h);
    const float* q = q_row(in, h, i);
    s.prob.resize(static_cast<size_t>(e + 1));
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j <= e; ++j) {
      s.prob[j] = score_logit(dot_f64(q, k_row(in, g, j), in.d), scale, score);
      mx = std::max(mx, s.prob[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j <= e; ++j) {
      s.prob[j] = std::exp(s.prob[j] - mx);
      sum += s.prob[j];
    }
    for (size_t m = 0; m < masks.size(); ++m) {
      attended_keys(in, p, *masks[m], h, i, s.keys);
      double mass = 0;
      for (int64_t key : s.keys) mass += s.prob[key];
      result[m].per_query[item] = mass / sum;
    }
  });
  for (AttentionMass& r : result) {
    r.per_head.assign(static_cast<size_t>(in.hq), 0.0);
    for (int64_t h = 0; h < in.hq; ++h) {
      double total = 0;
      for (int64_t i = 0; i < in.tq; ++i) total += r.per_query[h * in.tq + i];
      r.per_head[h] = total / static_cast<double>(in.tq);
    }
  }
  return result;
}

std::vector<double> output_relative_error(const AttentionOutput& sparse, const AttentionOutput& dense) {
  if (sparse.heads != dense.heads || sparse.tq != dense.tq || sparse.d != dense.d ||
      sparse.out.size() != dense.out.size()) {
    throw std::invalid_argument("output_relative_error: sparse and dense outputs have different shapes");
  }
  std::vector<double> err(static_cast<size_t>(dense.heads), 0.0);
  const int64_t per_head = dense.tq * dense.d;
  for (int64_t h = 0; h < dense.heads; ++h) {
    double diff2 = 0, ref2 = 0;
    for (int64_t j = h * per_head; j < (h + 1) * per_head; ++j) {
      const double dd = sparse.out[j] - dense.out[j];
      diff2 += dd * dd;
      ref2 += dense.out[j] * dense.out[j];
    }
    if (ref2 > 0) {
      err[h] = std::sqrt(diff2 / ref2);
    } else {
      err[h] = diff2 > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    }
  }
  return err;
}

std::vector<char> searched_query_blocks(const AttentionInputs& in, const HipParams& p) {
  const int64_t qbs = query_blocks(in, p);
  std::vector<char> flags(static_cast<size_t>(qbs), 0);
  for (int64_t qb = 0; qb < qbs; ++qb) flags[qb] = search_range(in, p, qb).blocks() > hip_kb(p) ? 1 : 0;
  return flags;
}

std::vector<double> mean_per_head(const std::vector<double>& per_block, int64_t heads, int64_t query_blocks,
                                  const std::vector<char>* include) {
  if (per_block.size() != static_cast<size_t>(heads * query_blocks) ||
      (include && include->size() != static_cast<size_t>(query_blocks))) {
    throw std::invalid_argument("mean_per_head: values do not have the (heads, query_blocks) shape");
  }
  std::vector<double> mean(static_cast<size_t>(heads), std::numeric_limits<double>::quiet_NaN());
  for (int64_t h = 0; h < heads; ++h) {
    double total = 0;
    int64_t n = 0;
    for (int64_t qb = 0; qb < query_blocks; ++qb) {
      if (include && !(*include)[qb]) continue;
      total += per_block[h * query_blocks + qb];
      ++n;
    }
    if (n > 0) mean[h] = total / static_cast<double>(n);
  }
  return mean;
}

}  // namespace hipstudio::hip
