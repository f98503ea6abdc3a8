// Quest's rule (quest.cpp) on tensors: page min / max by amin / amax (exact), each row's bound
// summed over d ascending from +0.0 (one add per d, quest_rule.h's order), the max over the
// block's sampled rows, ranked by rank_blocks_in_ranges. On CUDA with the kernels built, one kernel
// per head computes the scores with the same operations in the same order (kernels/cuda/
// quest_bound.h) and one more ranks them; elsewhere LibTorch ops do, heads and query blocks in
// chunks, so the (rows, pages) bounds stay within a fixed number of elements.
#include <limits>

#include "kernels/methods/torch/tensor_method_mask.h"
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/quest_bound.h"
#endif

namespace hipstudio::hip::methods {

MethodMaskTensors quest_tensor_select(const TensorInputs& inputs, const SelectionContext& ctx, const MethodState*) {
  const CheckedInputs in = check_tensor_inputs(inputs);
  const HipParams& p = ctx.hip;
  const int64_t b = method_int(ctx.values, "quest_page"), d = in.shape.d, tq = in.shape.tq;
  const int64_t pages = in.shape.tk / b, take = p.k / b, group = in.shape.hq / in.shape.hkv;
  const RangeTensors r = range_tensors(in, p, b);
  const int64_t qbs = static_cast<int64_t>(r.hi_host.size()), per_block = (p.b_q + p.b_sq - 1) / p.b_sq;
  const at::Tensor whole = in.k.narrow(1, 0, pages * b).view({in.shape.hkv, pages, b, d});
  const at::Tensor page_min = std::get<0>(whole.min(2)), page_max = std::get<0>(whole.max(2));  // (hkv, pages, d)
  std::vector<at::Tensor> head_blocks, head_counts;
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  if (in.q.is_cuda()) {
    const at::Tensor mn = page_min.transpose(1, 2).contiguous(), mx = page_max.transpose(1, 2).contiguous();  // (hkv, d, pages)
    const at::Tensor score = at::empty({1, qbs, pages}, in.f64);
    for (int64_t h = 0; h < in.shape.hq; ++h) {
      gpu::QuestBoundLaunch l;
      l.q = in.q.data_ptr<double>() + h * tq * d;
      l.page_min = mn.data_ptr<double>() + (h / group) * d * pages;
      l.page_max = mx.data_ptr<double>() + (h / group) * d * pages;
      l.score = score.data_ptr<double>();
      l.hq = 1, l.hkv = 1, l.tq = tq, l.d = d, l.pages = pages, l.qbs = qbs, l.b_q = p.b_q, l.b_sq = p.b_sq;
      // Rows at the keys' end (implicit positions, causal): pages after a block's last row are not
      // scored; otherwise every page is (an offset of tk places every page before every row).
      l.page_size = b, l.key_offset = p.causal && in.positions.empty() ? in.shape.tk - tq : in.shape.tk;
      gpu::quest_page_scores(l);
      auto [blocks, counts] = rank_blocks_in_ranges(score, r.lo, r.hi, take, b, p);
      head_blocks.push_back(blocks[0]);
      head_counts.push_back(counts[0]);
    }
    return {at::stack(head_blocks).contiguous(), at::stack(head_counts).contiguous(), r.dense_from};
  }
#endif
  const at::Tensor eligible = in_range(r, pages, in.i64);  // (qbs, pages)
  const int64_t chunk = chunk_rows(per_block * pages);
  for (int64_t h = 0; h < in.shape.hq; ++h) {
    const at::Tensor mn = page_min[h / group], mx = page_max[h / group];  // (pages, d)
    std::vector<at::Tensor> parts_b, parts_c;
    for (int64_t q0 = 0; q0 < qbs; q0 += chunk) {
      const int64_t nq = std::min(chunk, qbs - q0);
      std::vector<int64_t> rows;
      std::vector<uint8_t> valid;
      for (int64_t qb = q0; qb < q0 + nq; ++qb)
        for (int64_t t = 0; t < per_block; ++t) {
          const int64_t i = qb * p.b_q + t * p.b_sq;
          rows.push_back(std::min(i, tq - 1));
          valid.push_back(i < tq);
        }
      const at::Tensor q = in.q[h].index_select(0, at::tensor(rows, at::kLong).to(in.i64.device()));  // (nq R, d)
      at::Tensor bound = at::zeros({q.size(0), pages}, in.f64);
      for (int64_t e = 0; e < d; ++e) {
        const at::Tensor x = q.narrow(1, e, 1);
        bound = bound + at::maximum(x * mn.select(1, e).unsqueeze(0), x * mx.select(1, e).unsqueeze(0));
      }
      const at::Tensor row_ok = at::tensor(std::vector<int64_t>(valid.begin(), valid.end()), at::kLong)
                                    .to(in.i64.device()).ne(0).unsqueeze(1);
      bound = at::where(row_ok, bound, at::full_like(bound, -std::numeric_limits<double>::infinity()));
      const at::Tensor score = std::get<0>(bound.view({nq, per_block, pages}).max(1));  // (nq, pages)
      auto [blocks, counts] = rank_blocks(score.unsqueeze(0), eligible.narrow(0, q0, nq).unsqueeze(0), take, b, p);
      parts_b.push_back(blocks[0]);
      parts_c.push_back(counts[0]);
    }
    head_blocks.push_back(at::cat(parts_b, 0));
    head_counts.push_back(at::cat(parts_c, 0));
  }
  return {at::stack(head_blocks).contiguous(), at::stack(head_counts).contiguous(), r.dense_from};
}

}  // namespace hipstudio::hip::methods
