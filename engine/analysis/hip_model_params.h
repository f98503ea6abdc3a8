#pragma once
// The parameters of HiP inside a model: the kernel's parameters plus l_d and r_m.
#include <cstdint>

#include "kernels/hip_params.h"

namespace hipstudio {

// Which blocks the sparse layers attend: HiP's estimate, or for comparison the same budget chosen
// uniformly at random (the paper's theorem-1 baseline) or by the exact oracle.
enum class BlockSelection { Hip, Random, Oracle };

struct HipModelParams {
  hip::HipParams hip;          // k, b_q, b_k, b_sq, b_sk, sink, window, rho (causal always)
  int64_t dense_layers = 3;    // l_d
  int64_t refresh_every = 8;   // r_m, decode steps per mask estimate
  BlockSelection selection = BlockSelection::Hip;
  uint64_t random_seed = 1;    // for BlockSelection::Random
};

}  // namespace hipstudio
