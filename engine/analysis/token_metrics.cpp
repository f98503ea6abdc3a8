#include "engine/analysis/token_metrics.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

namespace hipstudio {

int64_t token_metric_rows(int64_t vocab, int64_t budget_bytes) {
  // Two float32 logits and, per side, float64 log-probabilities and one temporary of them.
  const int64_t per_row = std::max<int64_t>(1, vocab) * (2 * 4 + 4 * 8);
  return std::max<int64_t>(1, budget_bytes / per_row);
}

PairedTokenMetrics paired_token_metrics(const Transformer& model, const at::Tensor& dense_hidden,
                                        const at::Tensor& hip_hidden, const std::vector<int32_t>& ids,
                                        int64_t rows_per_block) {
  c10::InferenceMode inference;
  const int64_t n = static_cast<int64_t>(ids.size());
  if (rows_per_block <= 0) rows_per_block = token_metric_rows(model.model().config.vocab_size);
  const auto device = dense_hidden.device();
  const at::Tensor next = at::tensor(at::IntArrayRef(std::vector<int64_t>(ids.begin() + 1, ids.end())), at::kLong).to(device);
  at::Tensor kl_sum = at::zeros({}, dense_hidden.options().dtype(at::kDouble));
  at::Tensor agree = at::zeros({}, dense_hidden.options().dtype(at::kLong));
  std::vector<at::Tensor> dense_nll, hip_nll;
  at::Tensor dense_argmax, hip_argmax;
  for (int64_t a = 0; a < n; a += rows_per_block) {
    const int64_t rows = std::min(rows_per_block, n - a);
    const at::Tensor dense_logits = model.logits_of(dense_hidden.narrow(0, a, rows));
    const at::Tensor hip_logits = model.logits_of(hip_hidden.narrow(0, a, rows));
    dense_argmax = dense_logits.argmax(-1);
    hip_argmax = hip_logits.argmax(-1);
    agree += dense_argmax.eq(hip_argmax).sum();
    const at::Tensor dense_lp = at::log_softmax(dense_logits.to(at::kDouble), -1);
    const at::Tensor hip_lp = at::log_softmax(hip_logits.to(at::kDouble), -1);
    kl_sum += (dense_lp.exp() * (dense_lp - hip_lp)).sum();
    // Row i predicts token i + 1: every row but the prompt's last.
    const int64_t scored = std::min(rows, n - 1 - a);
    if (scored > 0) {
      const at::Tensor target = next.narrow(0, a, scored).unsqueeze(1);
      dense_nll.push_back(-dense_lp.narrow(0, 0, scored).gather(1, target).squeeze(1));
      hip_nll.push_back(-hip_lp.narrow(0, 0, scored).gather(1, target).squeeze(1));
    }
  }
  PairedTokenMetrics m;
  auto host = [](const std::vector<at::Tensor>& parts) {
    if (parts.empty()) return std::vector<double>{};
    const at::Tensor all = at::cat(parts).to(at::kCPU).contiguous();
    return std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + all.numel());
  };
  m.dense_nll = host(dense_nll);
  m.hip_nll = host(hip_nll);
  m.kl = kl_sum.item<double>() / static_cast<double>(n);
  m.top1_agreement = static_cast<double>(agree.item<int64_t>()) / static_cast<double>(n);
  m.dense_last = static_cast<int32_t>(dense_argmax[-1].item<int64_t>());
  m.hip_last = static_cast<int32_t>(hip_argmax[-1].item<int64_t>());
  return m;
}

}  // namespace hipstudio
