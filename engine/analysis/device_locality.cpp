#include "engine/analysis/device_locality.h"

#include <cmath>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/analysis/kept_inputs.h"

namespace hipstudio {

namespace {

// Pair differences x = s[j + delta] - s[j] of every row (R, T - delta) and which of them are pairs
// of visible keys (j + delta <= the row's query position).
struct Pairs {
  at::Tensor x, valid;
};
Pairs pairs_at(const at::Tensor& scores, const at::Tensor& ends, int64_t delta) {
  const int64_t T = scores.size(1);
  Pairs p;
  p.x = scores.narrow(1, delta, T - delta) - scores.narrow(1, 0, T - delta);
  const at::Tensor j = at::arange(T - delta, ends.options());
  p.valid = j.unsqueeze(0).le((ends - delta).unsqueeze(1));
  return p;
}

}  // namespace

hip::ScoreLocality score_locality_of_tensors(const at::Tensor& q, const at::Tensor& k, int64_t head,
                                             const std::vector<int64_t>& queries, const hip::LocalityParams& lp) {
  if (q.dim() != 3 || k.dim() != 3 || k.size(1) != q.size(1) || k.size(0) < 1 || q.size(0) % k.size(0) != 0)
    throw hip::AttentionInputError("score locality: q (heads, tokens, dim) and k (kv_heads, tokens, dim) expected");
  const int64_t heads = q.size(0), tokens = q.size(1);
  if (head < 0 || head >= heads)
    throw hip::AttentionInputError("head " + std::to_string(head) + " is outside the " + std::to_string(heads) + " query heads");
  hip::validate_locality_params(lp);
  for (int64_t i : queries)
    if (i < 0 || i >= tokens)
      throw hip::AttentionInputError("query " + std::to_string(i) + " is outside the " + std::to_string(tokens) + " queries");
  c10::InferenceMode inference;
  // float64 products whatever the dtype, as the reference's dot_f64 on the same values: the pair
  // differences cancel, and float32 sums would move the range and the bins.
  const auto type = at::kDouble;
  const at::Tensor index = at::tensor(queries, at::kLong).to(q.device());
  const at::Tensor rows = q[head].index_select(0, index).to(type);
  const at::Tensor keys = k[head / (heads / k.size(0))].to(type);
  const at::Tensor scores = at::matmul(rows, keys.t()).to(at::kDouble);  // (R, T); row i is read up to queries[i]
  const at::Tensor ends = index;
  const double inf = std::numeric_limits<double>::infinity();

  hip::ScoreLocality out;
  out.head = head;
  out.queries = queries;
  const size_t n = lp.deltas.size();
  // Pass 1 (as the reference's): pairs, sum and range of every Delta, fetched together.
  std::vector<at::Tensor> first;
  for (int64_t delta : lp.deltas) {
    if (delta >= tokens || queries.empty()) {
      first.push_back(at::zeros({4}, scores.options()));
      continue;
    }
    const Pairs p = pairs_at(scores, ends, delta);
    const at::Tensor invalid = p.valid.logical_not();
    first.push_back(at::stack({p.valid.sum().to(at::kDouble), p.x.masked_fill(invalid, 0).sum(),
                               p.x.masked_fill(invalid, inf).min(), p.x.masked_fill(invalid, -inf).max()}));
  }
  const at::Tensor moments = first.empty() ? at::zeros({0, 4}, at::kDouble) : at::stack(first).to(at::kCPU).contiguous();
  out.deltas.resize(n);
  std::vector<at::Tensor> second(n);
  for (size_t i = 0; i < n; ++i) {
    hip::DeltaStats& st = out.deltas[i];
    const double* m = moments.data_ptr<double>() + 4 * static_cast<int64_t>(i);
    st = hip::delta_stats_of_pass1(lp.deltas[i], static_cast<int64_t>(m[0]), m[1], m[2], m[3], lp.bins);
    if (st.pairs == 0) continue;
    // Pass 2: variance about the mean and the histogram, the reference's bin rule (the last bin
    // takes the top; padding pairs go to an extra bin that is dropped).
    const double scale = hip::histogram_scale(st);
    const Pairs p = pairs_at(scores, ends, st.delta);
    const at::Tensor invalid = p.valid.logical_not();
    const at::Tensor bin = ((p.x - st.hist_lo) * scale).floor().clamp(0, static_cast<double>(lp.bins - 1)).to(at::kLong)
                               .masked_fill(invalid, lp.bins);
    const at::Tensor counts = at::bincount(bin.reshape({-1}), {}, lp.bins + 1).narrow(0, 0, lp.bins).to(at::kDouble);
    const at::Tensor centred = (p.x - st.mean).masked_fill(invalid, 0);
    second[i] = at::cat({centred.pow(2).sum().unsqueeze(0), counts});
  }
  for (size_t i = 0; i < n; ++i) {
    hip::DeltaStats& st = out.deltas[i];
    if (st.pairs == 0) continue;
    const at::Tensor host = second[i].to(at::kCPU).contiguous();
    const double* h = host.data_ptr<double>();
    for (int64_t b = 0; b < lp.bins; ++b) st.counts[static_cast<size_t>(b)] = static_cast<int64_t>(h[1 + b]);
    hip::finish_delta_stats(st, h[0]);
  }
  return out;
}

std::optional<hip::ScoreLocality> score_locality_on_device(const LayerInputs& inputs, int64_t head,
                                                           const std::vector<int64_t>& queries,
                                                           const hip::LocalityParams& lp) {
  const auto* kept = dynamic_cast<const TensorLayerInputs*>(inputs.source());
  if (!kept || !kept->q().is_cuda()) return std::nullopt;
  return score_locality_of_tensors(kept->q(), kept->k(), head, queries, lp);
}

}  // namespace hipstudio
