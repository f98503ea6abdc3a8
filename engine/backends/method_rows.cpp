#include "engine/backends/method_rows.h"

namespace hipstudio {

MethodRows method_rows(const at::Tensor& blocks, const at::Tensor& counts, const at::Tensor& dense_from,
                       const hip::HipParams& p, int64_t gap, int64_t tq, int64_t tk) {
  if (gap <= 0) return {blocks, counts};
  const int64_t heads = blocks.size(0), qbs = blocks.size(1), kb = blocks.size(2);
  const at::TensorOptions i64 = dense_from.options().dtype(at::kLong);
  const at::Tensor count = counts.to(at::kLong);
  // The blocks inside the sink come first (rows ascend): shift the rest left over them.
  const at::Tensor column = at::arange(kb, i64);
  const at::Tensor in_row = column.view({1, 1, kb}) < count.unsqueeze(2);
  const at::Tensor n_sink = (in_row & (blocks.to(at::kLong) < p.sink / p.b_k)).sum(2);  // (hq, qbs)
  const at::Tensor kept = count - n_sink;
  const at::Tensor from = (column.view({1, 1, kb}) + n_sink.unsqueeze(2)).clamp_max(kb - 1);
  at::Tensor rows = at::where(column.view({1, 1, kb}) < kept.unsqueeze(2), blocks.to(at::kLong).gather(2, from),
                              at::full({}, -1, i64));
  // The blocks between the method's dense_from and HiP's (search_range.h's hi of each block's first row).
  const at::Tensor p0 = at::arange(qbs, i64) * p.b_q + (tk - tq);
  const at::Tensor hip_hi = at::clamp_min(at::div(p0 + 1 - p.window, p.b_k, "floor"), p.sink / p.b_k);
  // From the method's dense_from, or the sink's end where its tail starts inside the sink.
  const at::Tensor first = at::clamp_min(at::div(dense_from.to(at::kLong), p.b_k, "floor"), p.sink / p.b_k);
  const at::Tensor n_gap = at::clamp_min(hip_hi - first, 0);  // (qbs)
  const at::Tensor j = at::arange(gap, i64);
  const at::Tensor gap_blocks =
      at::where(j.unsqueeze(0) < n_gap.unsqueeze(1), first.unsqueeze(1) + j, at::full({}, -1, i64))
          .unsqueeze(0)
          .expand({heads, qbs, gap});
  rows = at::cat({rows, at::full({heads, qbs, gap}, -1, i64)}, 2);
  const at::Tensor at_column = (kept.unsqueeze(2) + j).clamp_max(kb + gap - 1);
  rows = rows.scatter(2, at_column, gap_blocks.contiguous());
  return {rows.to(at::kInt).contiguous(), (kept + n_gap.unsqueeze(0)).to(at::kInt).contiguous()};
}

}  // namespace hipstudio
