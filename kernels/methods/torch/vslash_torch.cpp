// MInference's vertical-slash rule (vslash.h) on tensors. Steps 1-3 per head: the last rows'
// logits in dot_f64's order (dot_f64_pairs), exp_f64, the tree sum, the division by a tensor, v
// and s summed over the rows ascending; V and S by a stable sort, copied to the host as the CPU
// reference's VslashState. Step 4 per head and chunk of query blocks: the selected tokens marked
// in a (blocks, tk) table by scatter, counted per b_k block, ranked by rank_blocks.
#include <cmath>
#include <limits>

#include "kernels/methods/torch/tensor_fixed_order.h"
#include "kernels/methods/torch/tensor_method_mask.h"
#include "kernels/methods/vslash.h"

namespace hipstudio::hip::methods {
namespace {

// The `take` indices of scores[0, n) with the largest values (ties: lower index), ascending, on the host.
std::vector<int64_t> top_of(const at::Tensor& scores, int64_t n, int64_t take) {
  const int64_t m = std::min(take, n);
  if (m <= 0) return {};
  const at::Tensor order = std::get<1>(at::sort(scores.narrow(0, 0, n), true, 0, true)).narrow(0, 0, m);
  const at::Tensor host = std::get<0>(at::sort(order)).to(at::kCPU).contiguous();
  return std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + m);
}

}  // namespace

std::shared_ptr<const MethodState> vslash_tensor_state(const TensorInputs& inputs, const SelectionContext& ctx) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const HipParams& p = ctx.hip;
  const int64_t tq = in.shape.tq, tk = in.shape.tk, rows = std::min(kVslashLastRows, tq), first = tq - rows;
  std::vector<int64_t> row_index;
  int64_t top = 0;
  for (int64_t r = first; r < tq; ++r) row_index.push_back(r), top = std::max(top, visible_end(in.shape, p, r));
  const int64_t nv = std::min(vslash_vertical_count(ctx), top + 1), ns = std::min(p.k - nv, top + 1);
  const at::Tensor ends = visible_ends(in, p, row_index).unsqueeze(1);  // (L, 1)
  const at::Tensor keys = at::arange(tk, in.i64).unsqueeze(0);         // (1, tk)
  const at::Tensor visible = keys.le(ends);
  const at::Tensor offset_key = ends - keys;  // key p_r - o at offset o
  const double scale = 1.0 / std::sqrt(static_cast<double>(in.shape.d));
  const int64_t group = in.shape.hq / in.shape.hkv;
  auto state = std::make_shared<VslashState>();
  for (int64_t h = 0; h < in.shape.hq; ++h) {
    at::Tensor x = dot_f64_pairs(in.q[h].narrow(0, first, rows), in.k[h / group]) * scale;  // (L, tk)
    x = at::where(visible, x, at::full_like(x, -std::numeric_limits<double>::infinity()));
    const at::Tensor e = exp_f64(x - std::get<0>(x.max(1, /*keepdim=*/true)));
    const at::Tensor a = e / tree_sum_last(e).unsqueeze(1);
    const at::Tensor slash = at::where(offset_key.ge(0), a.gather(1, offset_key.clamp_min(0)), at::zeros_like(a));
    at::Tensor v = at::zeros({tk}, in.f64), s = at::zeros({tk}, in.f64);
    for (int64_t r = 0; r < rows; ++r) v = v + a[r], s = s + slash[r];
    state->vertical.push_back(top_of(v, top + 1, nv));
    state->slash.push_back(top_of(s, top + 1, ns));
  }
  return state;
}

MethodMaskTensors vslash_tensor_select(const TensorInputs& inputs, const SelectionContext& ctx,
                                       const MethodState* state_base) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const VslashState& state = dynamic_cast<const VslashState&>(*state_base);
  const HipParams& p = ctx.hip;
  if (static_cast<int64_t>(state.vertical.size()) != in.shape.hq || static_cast<int64_t>(state.slash.size()) != in.shape.hq)
    throw MethodError("vslash: the prompt's state has " + std::to_string(state.vertical.size()) + " heads, the rows " +
                      std::to_string(in.shape.hq));
  const int64_t b = p.b_k, tk = in.shape.tk, tq = in.shape.tq, kb = p.k / b, blocks_n = tk / b;
  const RangeTensors r = range_tensors(in, p, b);
  const int64_t qbs = static_cast<int64_t>(r.hi_host.size());
  const at::Tensor eligible_range = in_range(r, blocks_n, in.i64);           // (qbs, blocks)
  const at::Tensor token_end = r.hi * b;                                     // (qbs) the range's keys end
  const at::Tensor few = (r.hi - r.lo).le(kb).unsqueeze(1);                  // (qbs, 1) whole range taken
  std::vector<int64_t> row_index;
  std::vector<int64_t> row_ok;
  for (int64_t qb = 0; qb < qbs; ++qb)
    for (int64_t t = 0; t < p.b_q; ++t) {
      const int64_t i = qb * p.b_q + t;
      row_index.push_back(std::min(i, tq - 1));
      row_ok.push_back(i < tq);
    }
  const at::Tensor ends = visible_ends(in, p, row_index).view({qbs, p.b_q});
  const at::Tensor rows_valid = at::tensor(row_ok, at::kLong).to(in.i64.device()).ne(0).view({qbs, p.b_q});
  const int64_t chunk = chunk_rows(tk + 1 + p.b_q * std::max<int64_t>(p.k, 1));
  std::vector<at::Tensor> head_blocks, head_counts;
  for (int64_t h = 0; h < in.shape.hq; ++h) {
    const at::Tensor vertical = at::tensor(state.vertical[h], at::kLong).to(in.i64.device());
    const at::Tensor slash = at::tensor(state.slash[h], at::kLong).to(in.i64.device());
    at::Tensor vmark = at::zeros({tk + 1}, in.i64.dtype(at::kByte));
    if (vertical.numel() > 0) vmark.index_fill_(0, vertical.clamp_max(tk), 1);
    std::vector<at::Tensor> parts_b, parts_c;
    for (int64_t q0 = 0; q0 < qbs; q0 += chunk) {
      const int64_t nq = std::min(chunk, qbs - q0);
      const at::Tensor first = at::full({nq, 1}, r.lo * b, in.i64), end = token_end.narrow(0, q0, nq).unsqueeze(1);
      const at::Tensor keys = at::arange(tk + 1, in.i64).unsqueeze(0);
      at::Tensor marked = vmark.unsqueeze(0).expand({nq, tk + 1}) & (keys.ge(first) & keys.lt(end)).to(at::kByte);
      if (slash.numel() > 0) {
        // (nq, b_q, |S|) tokens p_i - o; those outside the range (or of rows past tq) go to column tk.
        const at::Tensor tok = ends.narrow(0, q0, nq).unsqueeze(2) - slash.view({1, 1, -1});
        const at::Tensor ok = tok.ge(first.unsqueeze(2)) & tok.lt(end.unsqueeze(2)) &
                              rows_valid.narrow(0, q0, nq).unsqueeze(2);
        const at::Tensor where = at::where(ok, tok, at::full_like(tok, tk)).view({nq, -1});
        marked = marked.scatter(1, where, at::ones_like(where, in.i64.dtype(at::kByte)));
      }
      const at::Tensor counts =
          marked.narrow(1, 0, blocks_n * b).view({nq, blocks_n, b}).sum(-1).to(at::kDouble);  // (nq, blocks)
      const at::Tensor eligible = eligible_range.narrow(0, q0, nq) & (counts.gt(0) | few.narrow(0, q0, nq));
      auto [blocks, cnt] = rank_blocks(counts.unsqueeze(0), eligible.unsqueeze(0), kb, b, p);
      parts_b.push_back(blocks[0]);
      parts_c.push_back(cnt[0]);
    }
    head_blocks.push_back(at::cat(parts_b, 0));
    head_counts.push_back(at::cat(parts_c, 0));
  }
  return {at::stack(head_blocks).contiguous(), at::stack(head_counts).contiguous(), r.dense_from};
}

}  // namespace hipstudio::hip::methods
