#include "kernels/methods/torch/tensor_top_blocks.h"

#include <limits>
#include <vector>

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

}  // namespace hipstudio::hip::methods
