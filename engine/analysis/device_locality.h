#pragma once
// Score locality (kernels/score_locality.h) computed where a CUDA run keeps the layer's tensors: the
// sampled query rows' scores, every Delta's pair differences, moments, range and histogram on the
// device, two transfers of a few numbers per Delta back. The float64 reference's rules throughout:
// its two passes and binning (hip::delta_stats_of_pass1, histogram_scale, finish_delta_stats); tests
// compare the two. The GUI passes the rows and Deltas of hip::locality_sample.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "kernels/score_locality.h"

namespace at {
class Tensor;  // this header stays free of LibTorch's (the GUI includes it)
}  // namespace at

namespace hipstudio {

// q (heads, tokens, dim), k (kv_heads, tokens, dim) on any device, causal prefill: query i sees keys
// [0, i]. Scores and statistics are float64 (products of the inputs' values, as the reference's). Throws hip::AttentionInputError / HipParamError as the reference does.
hip::ScoreLocality score_locality_of_tensors(const at::Tensor& q, const at::Tensor& k, int64_t head,
                                             const std::vector<int64_t>& queries, const hip::LocalityParams& lp);

// The same for a kept layer whose tensors live on a CUDA device; empty for host arrays.
std::optional<hip::ScoreLocality> score_locality_on_device(const LayerInputs& inputs, int64_t head,
                                                           const std::vector<int64_t>& queries,
                                                           const hip::LocalityParams& lp);

}  // namespace hipstudio
