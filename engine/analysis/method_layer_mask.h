#pragma once
// One registry method's mask of one layer (kernels/methods/selection_method.h), selected from the
// run's kept inputs of that layer (PairedAnalysis::inputs): what the GUI draws for a method the
// run's sparse side did not run, beside the layer's oracle. Where the inputs live on a device
// (a CUDA run's TensorLayerInputs) and the method has a tensor implementation
// (find_tensor_selection), that implementation selects on the device; otherwise the float64 CPU
// reference (select_masks on the host copy) does. Both give the same mask (the tensor
// implementations reproduce the reference, ties included), so the path is a speed, not a result.
// This header stays free of LibTorch: the GUI's worker reads the result type.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "kernels/mask_reference.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio {

struct MethodLayerMask {
  hip::methods::MethodChoice method;  // the registry name and its resolved values
  int64_t layer = 0;
  hip::HipParams params;              // the budget it selected at (the layer views' params, causal)
  hip::MaskResult mask;               // (heads, query blocks, kb) the method's mask of the prompt
  std::vector<double> recall;         // (heads, query blocks) vs the oracle given; empty without one
  // The tensor implementation selected on a device (CUDA): `seconds` is a device timing. False: the
  // float64 CPU reference ran (or the tensor implementation on CPU tensors), a reference timing.
  bool on_device = false;
  std::string source;  // where it ran: "tensor implementation on cuda:0" / "float64 CPU reference"
  double seconds = 0;  // wall time of the selection, the mask's copy to the host included
};

// `choice` (validated: MethodError) on the layer `in` at budget `p` (HipParamError), seeded for
// layer in.layer; `oracle`: the oracle mask of the same inputs and params (e.g. the layer views'
// LayerMaskViews::oracle), which recall is computed against; null: no recall (the oracle costs
// O(T^2 d) per head on the CPU, so it is never computed here behind the caller's back).
// `threads`: the CPU reference's threads (0: all); the mask does not depend on it.
MethodLayerMask method_layer_mask(const LayerInputs& in, const hip::methods::MethodChoice& choice, const hip::HipParams& p,
                                  const hip::MaskResult* oracle, int threads = 0);

}  // namespace hipstudio
