#include "kernels/methods/torch/tensor_top_blocks.h"

#include <limits>
#include <stdexcept>
#include <vector>

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include <c10/core/DeviceGuard.h>

#include "kernels/cuda/top_in_ranges.h"
#endif

namespace hipstudio::hip::methods {

at::Tensor top_with_lower_ties(const at::Tensor& scores, const at::Tensor& eligible_in, int64_t take) {
  const at::Tensor eligible = eligible_in.expand(scores.sizes());
  if (take <= 0) return at::zeros_like(eligible);
  if (scores.size(-1) <= take) return eligible;
  const at::Tensor s = scores.masked_fill(eligible.logical_not(), -std::numeric_limits<double>::infinity());
  // The take-th largest is the smallest of the take largest: no need to sort them.
  const at::Tensor kth = std::get<0>(s.topk(take, -1, /*largest=*/true, /*sorted=*/false)).amin(-1, /*keepdim=*/true);
  const at::Tensor above = s.gt(kth);
  const at::Tensor tied = s.eq(kth).logical_and(eligible);
  const at::Tensor room = take - above.sum(-1, /*keepdim=*/true);
  const at::Tensor chosen = above.logical_or(tied.logical_and(tied.cumsum(-1).le(room)));
  const at::Tensor few = eligible.sum(-1, /*keepdim=*/true).le(take);
  return at::where(few, eligible, chosen);
}

// The running count in int32 and the indices scattered from a broadcast row, never materialised:
// at 128k tokens these tensors span 64k key blocks for every query block.
at::Tensor ascending_indices(const at::Tensor& selection, int64_t width) {
  const int64_t n = selection.size(-1);
  const auto ints = selection.options().dtype(at::kInt);
  std::vector<int64_t> shape(selection.sizes().begin(), selection.sizes().end());
  if (width <= 0) {
    shape.back() = 0;
    return at::empty(shape, ints);
  }
  const at::Tensor rank = (selection.to(at::kInt).cumsum(-1, at::kInt) - 1)
                              .clamp_max(width)
                              .masked_fill(selection.logical_not(), width)
                              .to(at::kLong);
  shape.back() = width + 1;  // the last column takes the unselected
  at::Tensor out = at::full(shape, -1, ints);
  out.scatter_(-1, rank, at::arange(n, ints).expand(selection.sizes()));
  return out.narrow(-1, 0, width).contiguous();
}

at::Tensor top_in_ranges(const at::Tensor& scores, int64_t lo, const at::Tensor& hi, int64_t take) {
  if (take < 1 || lo < 0 || scores.dim() < 2 || hi.dim() != 1 || hi.size(0) != scores.size(-2))
    throw std::invalid_argument("top in ranges: needs take >= 1, lo >= 0 and one range end per row");
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  const at::ScalarType t = scores.scalar_type();
  if (scores.is_cuda() && (t == at::kFloat || t == at::kDouble) && scores.size(-1) < (int64_t{1} << 31)) {
    const at::Tensor s = scores.contiguous();
    const at::Tensor ends = hi.to(s.device(), at::kLong).contiguous();
    std::vector<int64_t> shape(s.sizes().begin(), s.sizes().end());
    shape.back() = take;
    at::Tensor out = at::empty(shape, s.options().dtype(at::kInt));
    gpu::TopInRangesLaunch l;
    l.scores = s.data_ptr(), l.f64 = t == at::kDouble;
    l.n = s.size(-1), l.rows = out.numel() / take;
    l.hi = ends.data_ptr<int64_t>(), l.ranges = ends.size(0), l.lo = lo, l.take = take;
    l.out = out.data_ptr<int32_t>();
    const c10::DeviceGuard guard(s.device());  // the legacy default stream of the scores' device
    gpu::top_in_ranges(l);
    return out;
  }
#endif
  return top_in_ranges_by_tensor_ops(scores, lo, hi, take);
}

at::Tensor top_in_ranges_by_tensor_ops(const at::Tensor& scores, int64_t lo, const at::Tensor& hi, int64_t take) {
  const at::Tensor ends = hi.to(scores.device(), at::kLong);
  const at::Tensor ids = at::arange(scores.size(-1), ends.options());
  const at::Tensor eligible = ids.ge(lo).unsqueeze(0).logical_and(ids.unsqueeze(0).lt(ends.unsqueeze(1)));
  return ascending_indices(top_with_lower_ties(scores, eligible, take), take);
}

}  // namespace hipstudio::hip::methods
