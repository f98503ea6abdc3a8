#pragma once
// fixed_order_f64.h and dot_f64's order as tensor ops: the same float64 operations, one tensor op
// each (no fused or reordered arithmetic), so they give the CPU reference's bits on any device.
// Divisions only by tensors (LibTorch turns a division by a host scalar into a multiplication by
// its reciprocal on CUDA, which rounds differently).
#include <ATen/ATen.h>

namespace hipstudio::hip::methods {

// exp_f64 elementwise (float64 x <= 0; 0 below kExpFloor and for -infinity).
at::Tensor exp_f64(const at::Tensor& x);

// tree_sum_in_place over the last dimension: (..., n) -> (...).
at::Tensor tree_sum_last(const at::Tensor& x);

// dot_f64(rows[r], keys[t]) for every pair: rows (R, d), keys (T, d) float64 holding float32
// values -> (R, T), eight lanes over d = l, l + 8, ... from +0.0, combined
// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)).
// float64 CUDA tensors go to one kernel (kernels/cuda/dot_f64_pairs.h) where the kernels are built.
at::Tensor dot_f64_pairs(const at::Tensor& rows, const at::Tensor& keys);
// The same by tensor ops on any device (what the kernel is checked against).
at::Tensor dot_f64_pairs_by_tensor_ops(const at::Tensor& rows, const at::Tensor& keys);

}  // namespace hipstudio::hip::methods
