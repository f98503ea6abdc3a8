#include "engine/model/device_score_rows.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/model/kept_inputs.h"

namespace hipstudio {

std::optional<std::vector<std::vector<double>>> score_rows_on_device(const LayerInputs& inputs, int64_t head,
                                                                     const std::vector<int64_t>& queries) {
  const auto* kept = dynamic_cast<const TensorLayerInputs*>(inputs.source());
  if (!kept || !kept->q().is_cuda() || head < 0 || head >= inputs.heads) return std::nullopt;
  for (int64_t i : queries)
    if (i < 0 || i >= inputs.tokens) return std::nullopt;
  c10::InferenceMode inference;
  const bool exact = kept->q().scalar_type() == at::kFloat || kept->q().scalar_type() == at::kDouble;
  const auto type = exact ? at::kDouble : at::kFloat;
  const at::Tensor index = at::tensor(queries, at::TensorOptions().dtype(at::kLong)).to(kept->q().device());
  const at::Tensor rows = kept->q()[head].index_select(0, index).to(type);
  const at::Tensor keys = kept->k()[head / (inputs.heads / inputs.kv_heads)].to(type);
  const at::Tensor scores = at::matmul(rows, keys.t()).to(at::kCPU, at::kDouble).contiguous();
  std::vector<std::vector<double>> out;
  for (size_t r = 0; r < queries.size(); ++r) {
    const double* row = scores.data_ptr<double>() + static_cast<int64_t>(r) * inputs.tokens;
    out.emplace_back(row, row + queries[r] + 1);
  }
  return out;
}

}  // namespace hipstudio
