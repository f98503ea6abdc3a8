// MInference's vertical-slash rule (vslash.h; Jiang et al. 2024) on tensors. Steps 1-3 for the
// query heads of a chunk at once: the last rows' logits in dot_f64's order (dot_f64_pairs, once per
// KV head over its query heads' rows), exp_f64, the tree sum, the division by a tensor, v and s
// summed over the rows ascending; every operation is elementwise or along the keys, so batching
// heads leaves each head's bits as the CPU reference's. V and S by a stable sort of all heads' rows
// at once, copied to the host as the reference's VslashState. Step 4 (vslash_torch.h) by the CUDA
// kernel where it takes the shape, else per head and chunk of query blocks by LibTorch ops.
#include "kernels/methods/torch/vslash_torch.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/core/DeviceGuard.h>

#include "kernels/methods/torch/tensor_fixed_order.h"
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/vslash_blocks.h"
#endif

namespace hipstudio::hip::methods {
namespace {

// For every row of scores (heads, >= n): the `take` indices of [0, n) with the largest values
// (ties: lower index), ascending, on the host.
std::vector<std::vector<int64_t>> top_of_rows(const at::Tensor& scores, int64_t n, int64_t take) {
  const int64_t heads = scores.size(0), m = std::min(take, n);
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(heads));
  if (m <= 0) return out;
  const at::Tensor order = std::get<1>(at::sort(scores.narrow(1, 0, n), true, 1, true)).narrow(1, 0, m);
  const at::Tensor host = std::get<0>(at::sort(order, 1)).to(at::kCPU).contiguous();
  const int64_t* v = host.data_ptr<int64_t>();
  for (int64_t h = 0; h < heads; ++h) out[h].assign(v + h * m, v + (h + 1) * m);
  return out;
}

// The last rows' logits (heads h0 .. h0 + n, rows, tk) * scale, dot_f64_pairs once per KV head
// over the rows of its query heads in the chunk.
at::Tensor chunk_logits(const CheckedInputs& in, const at::Tensor& q_rows, int64_t h0, int64_t n, double scale) {
  const int64_t group = in.shape.hq / in.shape.hkv, rows = q_rows.size(1), d = in.shape.d;
  std::vector<at::Tensor> parts;
  for (int64_t h = h0; h < h0 + n;) {
    const int64_t g = h / group, heads = std::min(h0 + n, (g + 1) * group) - h;
    parts.push_back(dot_f64_pairs(q_rows.narrow(0, h, heads).reshape({heads * rows, d}), in.k[g]));
    h += heads;
  }
  const at::Tensor x = parts.size() == 1 ? parts[0] : at::cat(parts, 0);
  return x.view({n, rows, in.shape.tk}) * scale;
}

// The state must hold V and S of every head of the rows.
void require_heads(const CheckedInputs& in, const VslashState& state) {
  if (static_cast<int64_t>(state.vertical.size()) != in.shape.hq || static_cast<int64_t>(state.slash.size()) != in.shape.hq)
    throw MethodError("vslash: the prompt's state has " + std::to_string(state.vertical.size()) + " heads, the rows " +
                      std::to_string(in.shape.hq));
}

}  // namespace

std::shared_ptr<const MethodState> vslash_tensor_state(const TensorInputs& inputs, const SelectionContext& ctx) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const HipParams& p = ctx.hip;
  const int64_t tq = in.shape.tq, tk = in.shape.tk, hq = in.shape.hq, rows = std::min(kVslashLastRows, tq);
  const int64_t first = tq - rows;
  std::vector<int64_t> row_index;
  int64_t top = 0;
  for (int64_t r = first; r < tq; ++r) row_index.push_back(r), top = std::max(top, visible_end(in.shape, p, r));
  const int64_t nv = std::min(vslash_vertical_count(ctx), top + 1), ns = std::min(p.k - nv, top + 1);
  const at::Tensor ends = visible_ends(in, p, row_index).unsqueeze(1);  // (L, 1)
  const at::Tensor keys = at::arange(tk, in.i64).unsqueeze(0);         // (1, tk)
  const at::Tensor visible = keys.le(ends);                             // (L, tk)
  const at::Tensor offset_key = ends - keys;  // key p_r - o at offset o
  const at::Tensor slash_ok = offset_key.ge(0), slash_key = offset_key.clamp_min(0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(in.shape.d));
  const at::Tensor q_rows = in.q.narrow(1, first, rows);  // (hq, L, d)
  // Heads a chunk takes: (heads, L, tk) float64 tensors of at most 2^23 elements, one head's at
  // 128k tokens (the memory a head at a time took there); shorter prompts, where the launches
  // rather than the elements cost, batch more heads.
  const int64_t chunk = chunk_rows(rows * tk, int64_t{1} << 23);
  std::vector<at::Tensor> v_parts, s_parts;
  for (int64_t h0 = 0; h0 < hq; h0 += chunk) {
    const int64_t n = std::min(chunk, hq - h0);
    at::Tensor x = chunk_logits(in, q_rows, h0, n, scale);  // (n, L, tk)
    x = at::where(visible, x, at::full_like(x, -std::numeric_limits<double>::infinity()));
    const at::Tensor e = exp_f64(x - std::get<0>(x.max(-1, /*keepdim=*/true)));
    const at::Tensor a = e / tree_sum_last(e).unsqueeze(-1);
    const at::Tensor slash = at::where(slash_ok, a.gather(-1, slash_key.expand({n, rows, tk})), at::zeros_like(a));
    at::Tensor v = at::zeros({n, tk}, in.f64), s = at::zeros({n, tk}, in.f64);
    for (int64_t r = 0; r < rows; ++r) v = v + a.select(1, r), s = s + slash.select(1, r);
    v_parts.push_back(v);
    s_parts.push_back(s);
  }
  auto state = std::make_shared<VslashState>();
  state->vertical = top_of_rows(at::cat(v_parts, 0), top + 1, nv);
  state->slash = top_of_rows(at::cat(s_parts, 0), top + 1, ns);
  return state;
}

MethodMaskTensors vslash_blocks_by_tensor_ops(const CheckedInputs& in, const HipParams& p, const VslashState& state) {
  require_heads(in, state);
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

std::optional<MethodMaskTensors> vslash_blocks_by_kernel(const CheckedInputs& in, const HipParams& p,
                                                         const VslashState& state) {
  require_heads(in, state);
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  if (!in.q.is_cuda()) return std::nullopt;
  const int64_t b = p.b_k, tq = in.shape.tq, hq = in.shape.hq;
  const RangeTensors r = range_tensors(in, p, b);
  const int64_t qbs = static_cast<int64_t>(r.hi_host.size());
  int64_t widest = r.lo, max_slash = 0, listed = 0;
  for (int64_t hi : r.hi_host) widest = std::max(widest, hi);
  for (int64_t h = 0; h < hq; ++h) {
    max_slash = std::max<int64_t>(max_slash, static_cast<int64_t>(state.slash[h].size()));
    listed += static_cast<int64_t>(state.vertical[h].size() + state.slash[h].size());
  }
  gpu::VslashBlocksLaunch l;
  l.hq = hq, l.tq = tq, l.qbs = qbs, l.b_q = p.b_q, l.b = b, l.lo = r.lo, l.kb = p.k / b;
  l.range_tokens = (widest - r.lo) * b, l.max_slash = max_slash;
  const int64_t int32_max = std::numeric_limits<int32_t>::max();
  if (in.shape.tk > int32_max || listed > int32_max || !gpu::vslash_blocks_fit(l)) return std::nullopt;
  // One host buffer, one copy: the rows' visible ends (tq), then V's and S's begins (hq + 1 each)
  // and entries.
  std::vector<int32_t> host;
  host.reserve(static_cast<size_t>(tq + 2 * (hq + 1) + listed));
  for (int64_t i = 0; i < tq; ++i) host.push_back(static_cast<int32_t>(visible_end(in.shape, p, i)));
  auto append = [&](const std::vector<std::vector<int64_t>>& lists) {
    const size_t begins = host.size();
    int32_t at = 0;
    for (const std::vector<int64_t>& list : lists) host.push_back(at), at += static_cast<int32_t>(list.size());
    host.push_back(at);
    for (const std::vector<int64_t>& list : lists)
      for (int64_t x : list) host.push_back(static_cast<int32_t>(x));
    return begins;
  };
  const size_t vertical_at = append(state.vertical), slash_at = append(state.slash);
  const at::Tensor device = at::tensor(host, at::kInt).to(in.i64.device());
  const int32_t* base = device.data_ptr<int32_t>();
  const at::Tensor blocks = at::empty({hq, qbs, l.kb}, in.i64.dtype(at::kInt));
  const at::Tensor counts = at::empty({hq, qbs}, in.i64.dtype(at::kInt));
  l.row_end = base;
  l.hi = r.hi.data_ptr<int64_t>();
  l.vertical_begin = base + vertical_at, l.vertical = l.vertical_begin + hq + 1;
  l.slash_begin = base + slash_at, l.slash = l.slash_begin + hq + 1;
  l.blocks = blocks.data_ptr<int32_t>(), l.counts = counts.data_ptr<int32_t>();
  const c10::DeviceGuard guard(in.q.device());  // the legacy default stream of the inputs' device
  gpu::vslash_select_blocks(l);
  return MethodMaskTensors{blocks, counts, r.dense_from};
#else
  (void)p;
  return std::nullopt;
#endif
}

MethodMaskTensors vslash_tensor_select(const TensorInputs& inputs, const SelectionContext& ctx,
                                       const MethodState* state_base) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const VslashState& state = dynamic_cast<const VslashState&>(*state_base);
  if (std::optional<MethodMaskTensors> m = vslash_blocks_by_kernel(in, ctx.hip, state)) return *std::move(m);
  return vslash_blocks_by_tensor_ops(in, ctx.hip, state);
}

}  // namespace hipstudio::hip::methods
