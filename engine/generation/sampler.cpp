#include "engine/generation/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <ATen/ATen.h>

#include "engine/formats/errors.h"

namespace hipstudio {

void validate_sampling(const SamplingOptions& o) {
  if (!(o.temperature >= 0.0)) throw InputError("--temperature must be >= 0 (0 = greedy)");
  if (!(o.top_p > 0.0 && o.top_p <= 1.0)) throw InputError("--top-p must be in (0, 1]");
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  validate_sampling(options);
}

int32_t Sampler::sample(const at::Tensor& logits) {
  const at::Tensor row = logits.contiguous();
  const float* l = row.data_ptr<float>();
  const int64_t n = row.numel();
  if (options_.temperature == 0.0) return static_cast<int32_t>(std::max_element(l, l + n) - l);

  // Softmax of logits / temperature in double, then keep the smallest set of tokens whose mass
  // reaches top_p (ties broken by token id so a seed always gives the same sequence).
  const double max_logit = *std::max_element(l, l + n);
  std::vector<double> p(n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += p[i] = std::exp((l[i] - max_logit) / options_.temperature);
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] != p[b] ? p[a] > p[b] : a < b; });
  double kept = 0.0;
  size_t cut = 0;
  while (cut < order.size() && kept < options_.top_p * total) kept += p[order[cut++]];
  const double r = std::uniform_real_distribution<double>(0.0, kept)(rng_);
  double acc = 0.0;
  for (size_t i = 0; i < cut; ++i) {
    acc += p[order[i]];
    if (r < acc) return order[i];
  }
  return order[cut - 1];
}

}  // namespace hipstudio
