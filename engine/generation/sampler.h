#pragma once
// Next-token choice from logits: greedy, or temperature + nucleus (top-p) sampling with a seed.
#include <cstdint>
#include <random>

#include <ATen/core/Tensor.h>

namespace hipstudio {

struct SamplingOptions {
  double temperature = 0.0;  // 0 = greedy (argmax)
  double top_p = 0.9;        // nucleus mass in (0, 1]; 1 = plain temperature sampling
  uint64_t seed = 42;
};

// Throws InputError for a negative temperature or top_p outside (0, 1].
void validate_sampling(const SamplingOptions& options);

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  // logits: [vocab] float32 on the CPU.
  int32_t sample(const at::Tensor& logits);

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace hipstudio
