#pragma once
// Tensor implementations of the selection methods (kernels/methods/selection_method.h): LibTorch
// ops that run wherever the tensors live (CUDA in a run, the CPU in tests) and give the very masks
// of the float64 CPU reference, ties included: scores are built from the same correctly rounded
// float64 operations in the same order (fixed_order_f64.h; tensor_fixed_order.h here), and ranks
// come from a stable sort (equal scores keep the lower index first, the references' tie rule).
// A method is listed here by the name of its registry entry; one without a line here (the oracle)
// has its CPU reference only, and callers say so (the Latency panel labels it a reference timing).
#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/methods/selection_method.h"

namespace hipstudio::hip::methods {

// One layer's inputs as tensors, all on one device.
struct TensorInputs {
  at::Tensor q;          // (hq, tq, d) float32, or float64 / bf16 / f16 (widened exactly to float64)
  at::Tensor k;          // (hkv, tk, d), q's dtype
  at::Tensor positions;  // (tq) int64, or undefined: query i at tk - tq + i
};

// The project's mask (hip::MaskResult's blocks, counts and dense_from) on the inputs' device.
struct MethodMaskTensors {
  at::Tensor blocks;      // (hq, qbs, kb) int32: b_k blocks ascending, -1 padded
  at::Tensor counts;      // (hq, qbs) int32: valid entries of each row
  at::Tensor dense_from;  // (qbs) int64: first key of each query block's dense tail
};

struct TensorSelection {
  std::string name;  // the registry entry's name
  // The masks of every (head, query block) of `in`; `state` as for the CPU reference.
  MethodMaskTensors (*select)(const TensorInputs& in, const SelectionContext& ctx, const MethodState* state) = nullptr;
  // The prompt's state for decode refreshes (null function: none), the CPU reference's own type.
  std::shared_ptr<const MethodState> (*prompt_state)(const TensorInputs& prompt, const SelectionContext& ctx) = nullptr;
};

// Every tensor implementation, in the registry's order.
const std::vector<const TensorSelection*>& tensor_selections();
// The tensor implementation of a registry entry, or null where it has the CPU reference only.
const TensorSelection* find_tensor_selection(const std::string& name);

// As select_masks / decode_state / select_for_decode (selection_method.h), on tensors: the same
// checks (plus the tensors' ranks, dtypes and devices: AttentionInputError), a MethodError when the
// method has no tensor implementation.
MethodMaskTensors select_masks(const SelectionMethod& method, const TensorInputs& in, const SelectionContext& ctx);
std::shared_ptr<const MethodState> decode_state(const SelectionMethod& method, const TensorInputs& prompt,
                                                const SelectionContext& ctx);
MethodMaskTensors select_for_decode(const SelectionMethod& method, const TensorInputs& rows,
                                    const SelectionContext& ctx, const MethodState* state);

// The mask copied to the host (iterations and branches 0).
MaskResult to_mask_result(const MethodMaskTensors& m);

}  // namespace hipstudio::hip::methods
