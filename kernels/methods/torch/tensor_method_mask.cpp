#include "kernels/methods/torch/tensor_method_mask.h"

#include <limits>
#include <string>

#include "kernels/methods/method_mask.h"
#include "kernels/methods/torch/tensor_top_blocks.h"
#include "kernels/shape_only_inputs.h"

namespace hipstudio::hip::methods {

CheckedInputs check_tensor_inputs(const TensorInputs& in) {
  auto fail = [](const std::string& what) { throw AttentionInputError("selection tensors: " + what); };
  if (!in.q.defined() || !in.k.defined()) fail("q and k must be defined");
  if (in.q.dim() != 3) fail("q must be (hq, tq, d), got " + std::to_string(in.q.dim()) + " dimensions");
  if (in.k.dim() != 3) fail("k must be (hkv, tk, d), got " + std::to_string(in.k.dim()) + " dimensions");
  if (in.q.device() != in.k.device()) fail("q and k must be on one device");
  if (!at::isFloatingType(in.q.scalar_type()) || in.q.scalar_type() != in.k.scalar_type())
    fail("q and k must share one floating dtype");
  if (in.q.size(2) != in.k.size(2)) fail("q and k must have the same head dimension");
  CheckedInputs c;
  c.f64 = in.q.options().dtype(at::kDouble);
  c.i64 = in.q.options().dtype(at::kLong);
  c.q = in.q.to(at::kDouble).contiguous();
  c.k = in.k.to(at::kDouble).contiguous();
  c.shape = shape_only_inputs(in.q.size(0), in.k.size(0), in.q.size(1), in.k.size(1), in.q.size(2));
  if (in.positions.defined()) {
    if (in.positions.dim() != 1 || in.positions.scalar_type() != at::kLong || in.positions.size(0) != in.q.size(1))
      fail("positions must be int64 (tq)");
    const at::Tensor host = in.positions.to(at::kCPU).contiguous();
    c.positions.assign(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
    c.shape.positions = c.positions.data();
  }
  validate_attention_inputs(c.shape, false);
  return c;
}

RangeTensors range_tensors(const CheckedInputs& in, const HipParams& p, int64_t b) {
  RangeTensors r;
  const int64_t qbs = query_blocks(in.shape, p);
  for (int64_t qb = 0; qb < qbs; ++qb) {
    const MethodRange mr = method_range(in.shape, p, b, qb);
    r.lo = mr.lo;
    r.hi_host.push_back(mr.hi);
    r.dense_from_host.push_back(mr.dense_from);
  }
  r.hi = at::tensor(r.hi_host, at::kLong).to(in.i64.device());
  r.dense_from = at::tensor(r.dense_from_host, at::kLong).to(in.i64.device());
  return r;
}

at::Tensor visible_ends(const CheckedInputs& in, const HipParams& p, const std::vector<int64_t>& rows) {
  std::vector<int64_t> ends(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) ends[i] = visible_end(in.shape, p, rows[i]);
  return at::tensor(ends, at::kLong).to(in.i64.device());
}

at::Tensor in_range(const RangeTensors& r, int64_t n, const at::TensorOptions& i64) {
  const at::Tensor j = at::arange(n, i64).unsqueeze(0);
  return j.ge(r.lo) & j.lt(r.hi.unsqueeze(1));
}

namespace {

// rank_blocks' rows from the chosen method blocks (h, qbs, cols) int, ascending and -1 padded.
std::pair<at::Tensor, at::Tensor> blocks_of_chosen(const at::Tensor& chosen_lists, int64_t b, const HipParams& p) {
  const int64_t kb = p.k / p.b_k, f = b / p.b_k, cols = chosen_lists.size(-1);
  const at::Tensor chosen = chosen_lists.to(at::kLong);
  const at::Tensor kept = chosen.ge(0);
  // Method block j -> b_k blocks j f + t, t in [0, f).
  std::vector<int64_t> wide(chosen.sizes().begin(), chosen.sizes().end());
  wide.back() = cols * f;
  const at::Tensor blocks = (chosen.unsqueeze(-1) * f + at::arange(f, chosen.options()).view({1, f})).reshape(wide);
  const at::Tensor ok = kept.unsqueeze(-1).expand({-1, -1, cols, f}).reshape(wide) & blocks.ge(p.sink / p.b_k);
  const int64_t big = std::numeric_limits<int32_t>::max();
  at::Tensor key = at::where(ok, blocks, at::full_like(blocks, big));
  if (cols * f < kb) {
    key = at::constant_pad_nd(key, {0, kb - cols * f}, static_cast<double>(big));
  }
  // Ascending already; the sort moves the blocks inside the sink out (kb entries a row: cheap).
  const at::Tensor sorted = std::get<0>(at::sort(key, -1)).narrow(-1, 0, kb);
  const at::Tensor out = at::where(sorted.eq(big), at::full_like(sorted, -1), sorted).to(at::kInt);
  return {out.contiguous(), ok.sum(-1).to(at::kInt).contiguous()};
}

}  // namespace

std::pair<at::Tensor, at::Tensor> rank_blocks(const at::Tensor& scores, const at::Tensor& eligible, int64_t take,
                                              int64_t b, const HipParams& p) {
  const int64_t cols = std::min(take, scores.size(-1));
  return blocks_of_chosen(ascending_indices(top_with_lower_ties(scores, eligible, cols), cols), b, p);
}

std::pair<at::Tensor, at::Tensor> rank_blocks_in_ranges(const at::Tensor& scores, int64_t lo, const at::Tensor& hi,
                                                        int64_t take, int64_t b, const HipParams& p) {
  const int64_t cols = std::min(take, scores.size(-1));
  if (cols < 1) return rank_blocks(scores, at::zeros_like(scores, scores.options().dtype(at::kBool)), take, b, p);
  return blocks_of_chosen(top_in_ranges(scores, lo, hi, cols), b, p);
}

MethodMaskTensors mask_tensors_of(const MaskResult& m, const at::TensorOptions& device) {
  MethodMaskTensors t;
  const at::TensorOptions i32 = at::TensorOptions().dtype(at::kInt);
  t.blocks = at::from_blob(const_cast<int32_t*>(m.blocks.data()), {m.heads, m.query_blocks, m.kb}, i32)
                 .to(device.device(), /*non_blocking=*/false, /*copy=*/true);
  t.counts = at::from_blob(const_cast<int32_t*>(m.counts.data()), {m.heads, m.query_blocks}, i32)
                 .to(device.device(), false, true);
  t.dense_from = at::tensor(m.dense_from, at::kLong).to(device.device());
  return t;
}

int64_t chunk_rows(int64_t per_row, int64_t budget) { return std::max<int64_t>(1, budget / std::max<int64_t>(per_row, 1)); }

}  // namespace hipstudio::hip::methods
