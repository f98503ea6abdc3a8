#pragma once
// A comparison of selection methods on one prompt (`hipstudio analyze --methods`): one paired run
// per method of the registry (kernels/methods/selection_method.h), every method as the sparse side
// at the same budget (HiP's k, b_k, sink, window, l_d, r_m) through the same block-sparse attention,
// against one dense prefill. Plain data: the JSON writer and the table read it without LibTorch.
#include <string>
#include <vector>

#include "engine/analysis/paired_result.h"

namespace hipstudio {

// One method's run. Its PairedAnalysis is what run_paired_analysis gives with options.hip.method
// set to the method: `hip` is that method's side, and each head's recall, mass and output error
// measure the method's mask against the oracle (LayerMaskViews::method).
struct MethodRun {
  hip::methods::MethodChoice method;
  PairedAnalysis analysis;
};

}  // namespace hipstudio
