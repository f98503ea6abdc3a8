#pragma once
// The selection rule the exact oracle and the registry's ranked methods share, on tensors of any
// device: among each row's eligible entries the `take` largest scores, ties to the lower index
// (kernels/oracle.h's rule, and the order a stable descending sort gives), and every eligible entry
// of a row that holds at most `take` of them. Formed from the take-th largest value and a running
// count of its ties: a few passes over a row, where a sort of every row of 64k key blocks cost
// seconds a layer at 128k tokens.
#include <cstdint>

#include <ATen/ATen.h>

namespace hipstudio::hip::methods {

// (..., n) bool selection of scores (..., n) (any floating dtype); eligible broadcasts to scores.
at::Tensor top_with_lower_ties(const at::Tensor& scores, const at::Tensor& eligible, int64_t take);

// Ascending -1 padded index lists (..., width) int32 of a selection (..., n) holding at most width
// entries per row: each selected index goes to its rank among the selected (a running count).
at::Tensor ascending_indices(const at::Tensor& selection, int64_t width);

// ascending_indices(top_with_lower_ties(scores, eligible, take), take) where row i of each (m, n)
// matrix of scores (..., m, n) may pick the columns [lo, hi[i]) (hi int64 (m)): (..., m, take) int32.
// On CUDA, float32 or float64 scores, with the kernels built: one kernel (kernels/cuda/
// top_in_ranges.h), the same lists; elsewhere the tensor ops below. take >= 1.
at::Tensor top_in_ranges(const at::Tensor& scores, int64_t lo, const at::Tensor& hi, int64_t take);
at::Tensor top_in_ranges_by_tensor_ops(const at::Tensor& scores, int64_t lo, const at::Tensor& hi, int64_t take);

}  // namespace hipstudio::hip::methods
