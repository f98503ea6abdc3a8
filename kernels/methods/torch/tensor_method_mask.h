#pragma once
// What the tensor implementations share: the checked inputs with a host copy of their shapes and
// positions (ranges are computed on the host by method_mask.h's very function, one value per
// query block), and the last step that turns per-block scores into the project's mask.
#include <ATen/ATen.h>

#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/methods/torch/tensor_selection.h"

namespace hipstudio::hip::methods {

struct CheckedInputs {
  at::Tensor q, k;                // float64, contiguous, on the inputs' device
  std::vector<int64_t> positions;  // (tq) host copy, empty when implicit
  AttentionInputs shape;          // shapes and positions only (no data: q / k point at a dummy)
  at::TensorOptions f64, i64;     // on the inputs' device
};

// Checks ranks, dtypes, devices and shapes (AttentionInputError naming the tensor), widens q and k.
CheckedInputs check_tensor_inputs(const TensorInputs& in);

// Per query block of block size b: lo (one value), hi and dense_from, as host vectors and device tensors.
struct RangeTensors {
  int64_t lo = 0;
  std::vector<int64_t> hi_host, dense_from_host;
  at::Tensor hi;          // (qbs) int64
  at::Tensor dense_from;  // (qbs) int64
};
RangeTensors range_tensors(const CheckedInputs& in, const HipParams& p, int64_t b);

// Visible ends of the query rows `rows` (any shape of int64 row indices, all valid), as a tensor.
at::Tensor visible_ends(const CheckedInputs& in, const HipParams& p, const std::vector<int64_t>& rows);

// Block indices (..., qbs, n) of method blocks 0..n-1 eligible for query block qb: lo <= j < hi[qb].
at::Tensor in_range(const RangeTensors& r, int64_t n, const at::TensorOptions& i64);

// The mask rows of `scores` (h, qbs, n) float64 over method blocks 0..n-1 of size b: among the
// eligible blocks, the `take` best (score descending, ties: lower block first; tensor_top_blocks.h),
// written as b_k blocks (those inside the sink dropped), ascending, -1 padded to kb = k / b_k
// columns; returns blocks (h, qbs, kb) int32 and counts (h, qbs) int32. `eligible` (h, qbs, n) bool.
std::pair<at::Tensor, at::Tensor> rank_blocks(const at::Tensor& scores, const at::Tensor& eligible, int64_t take,
                                              int64_t b, const HipParams& p);
// The same where query block i's eligible blocks are the range [lo, hi[i]) (hi (qbs) int64, as
// RangeTensors holds it): on CUDA one ranking kernel (tensor_top_blocks.h's top_in_ranges).
std::pair<at::Tensor, at::Tensor> rank_blocks_in_ranges(const at::Tensor& scores, int64_t lo, const at::Tensor& hi,
                                                        int64_t take, int64_t b, const HipParams& p);

// A host mask on `options`' device.
MethodMaskTensors mask_tensors_of(const MaskResult& m, const at::TensorOptions& device);

// Rows of at most `budget` elements of `per_row` each: how many rows one chunk takes (>= 1).
int64_t chunk_rows(int64_t per_row, int64_t budget = int64_t{1} << 25);

}  // namespace hipstudio::hip::methods
