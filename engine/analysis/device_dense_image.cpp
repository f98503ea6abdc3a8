#include "engine/analysis/device_dense_image.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/analysis/dense_image_pooling.h"
#include "engine/analysis/kept_inputs.h"

namespace hipstudio {

namespace {
constexpr int64_t kTileBytes = int64_t{512} << 20;  // one tile of query rows x keys of scores
}  // namespace

std::optional<PooledProbabilities> dense_image_on_device(const LayerInputs& inputs, const hip::AttentionRule& rule,
                                                         int64_t head, int max_side) {
  const auto* kept = dynamic_cast<const TensorLayerInputs*>(inputs.source());
  if (!kept || !kept->q().is_cuda() || head < 0 || head >= inputs.heads || max_side < 1) return std::nullopt;
  c10::InferenceMode inference;
  return pool_dense_probabilities(kept->q()[head], kept->k()[head / (inputs.heads / inputs.kv_heads)], rule, max_side);
}

PooledProbabilities pool_dense_probabilities(const at::Tensor& q_in, const at::Tensor& k_in, const hip::AttentionRule& rule,
                                             int max_side) {
  const int64_t tq = q_in.size(0), tk = k_in.size(0);
  const int64_t width = std::min<int64_t>(tk, max_side), height = std::min<int64_t>(tq, max_side);
  const bool exact = q_in.scalar_type() == at::kFloat || q_in.scalar_type() == at::kDouble;
  const auto type = exact ? at::kDouble : at::kFloat;
  const at::Tensor q = q_in.to(type);
  const at::Tensor k = k_in.to(type);
  const double scale = hip::score_scale(rule.score, q.size(1));
  const auto longs = q.options().dtype(at::kLong);
  // Texel of key j: floor(j * width / tk); of query row i: floor(i * height / tq) (the reference's).
  const at::Tensor keys = at::arange(tk, longs);
  const at::Tensor key_texel = at::div(keys * width, tk, "floor").unsqueeze(0);
  // -1 marks "nothing visible here": every probability is >= 0, so max pooling keeps it only in
  // texels that hold hidden keys alone (future or before the window), which become NaN as in the reference.
  at::Tensor grid = at::full({height, width}, -1.0, q.options());
  const int64_t rows_per_tile = std::clamp<int64_t>(kTileBytes / (tk * static_cast<int64_t>(q.element_size())), 1, tq);
  for (int64_t r0 = 0; r0 < tq; r0 += rows_per_tile) {
    const int64_t n = std::min(tq, r0 + rows_per_tile) - r0;
    const at::Tensor rows = at::arange(r0, r0 + n, longs);
    // Hidden: future keys, and keys before the window (first_visible_key's rule on tensors).
    at::Tensor hidden = keys.unsqueeze(0).gt(rows.unsqueeze(1));
    if (rule.window > 0) hidden.logical_or_(keys.unsqueeze(0).le(rows.unsqueeze(1) - rule.window));
    at::Tensor p = at::matmul(q.narrow(0, r0, n), k.t()).mul_(scale);
    if (rule.score.softcap > 0.0) p = p.div_(rule.score.softcap).tanh_().mul_(rule.score.softcap);  // score_logit
    p.masked_fill_(hidden, -std::numeric_limits<double>::infinity());
    p = at::softmax(p, 1).masked_fill_(hidden, -1.0);
    const at::Tensor cols = at::full({n, width}, -1.0, q.options()).scatter_reduce(1, key_texel.expand({n, tk}), p, "amax");
    const at::Tensor row_texel = at::div(rows * height, tq, "floor").unsqueeze(1).expand({n, width});
    grid.scatter_reduce_(0, row_texel, cols, "amax");
  }
  const at::Tensor host = grid.to(at::kCPU, at::kFloat).contiguous();
  PooledProbabilities out;
  out.rows = height;
  out.cols = width;
  out.values.assign(host.data_ptr<float>(), host.data_ptr<float>() + host.numel());
  for (float& v : out.values)
    if (v < 0) v = std::numeric_limits<float>::quiet_NaN();
  return out;
}

}  // namespace hipstudio
