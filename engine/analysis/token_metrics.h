#pragma once
// Per-token metrics of a paired run from both sides' residual streams, a few rows at a time on the
// run's device: next-token NLL of each side, KL(dense || HiP) and top-1 agreement. Logits exist
// only for one block of rows at a time, so a 128k-token prompt on a 128k-word vocabulary never
// holds T x vocab floats anywhere; only per-token scalars reach the host.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/model/transformer.h"

namespace hipstudio {

struct PairedTokenMetrics {
  std::vector<double> dense_nll, hip_nll;  // (T - 1) -log p(token i+1 | tokens 0..i)
  double kl = 0.0;                         // mean over the T positions
  double top1_agreement = 0.0;             // share of the T positions whose argmax agree
  int32_t dense_last = 0, hip_last = 0;    // each side's argmax after the last prompt token
};

// Rows of logits per block: as many as fit `budget_bytes` of float64 log-probabilities (both sides
// and their temporaries), at least one.
int64_t token_metric_rows(int64_t vocab, int64_t budget_bytes = int64_t{1} << 30);

// dense_hidden, hip_hidden: [T, dim] from Transformer::forward_hidden on the same ids (T of them).
// Log-probabilities are float64, as the CPU reference always computed them.
PairedTokenMetrics paired_token_metrics(const Transformer& model, const at::Tensor& dense_hidden,
                                        const at::Tensor& hip_hidden, const std::vector<int32_t>& ids,
                                        int64_t rows_per_block = 0);

}  // namespace hipstudio
