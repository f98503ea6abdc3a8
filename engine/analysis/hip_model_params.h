#pragma once
// The parameters of HiP inside a model: the kernel's parameters plus l_d and r_m, and the selection
// method the sparse layers take their masks from (HiP's search by default; the methods it is
// compared with run at the same budget through the same block-sparse attention).
#include <cstdint>

#include "kernels/hip_params.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio {

struct HipModelParams {
  hip::HipParams hip;          // k, b_q, b_k, b_sq, b_sk, sink, window, rho (causal always)
  int64_t dense_layers = 3;    // l_d
  int64_t refresh_every = 8;   // r_m, decode steps per mask selection
  // The registry method (kernels/methods/selection_method.h) and its values: "hip", "oracle",
  // "random" (its random_seed value: layer l draws with random_seed + l), "streaming", "quest", ...
  hip::methods::MethodChoice method;
};

}  // namespace hipstudio
