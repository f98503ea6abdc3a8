#pragma once
// Skips a gpu-labelled test, saying why, where there is no CUDA GPU or the HiP kernels were not built.
#include <gtest/gtest.h>

#include "engine/runtime/device.h"
#include "kernels/torch/hip_torch.h"

#define REQUIRE_CUDA_KERNELS()                                                                                 \
  if (!::hipstudio::cuda_available() || !::hipstudio::hip_torch::cuda_kernels_status().empty())                \
  GTEST_SKIP() << "no CUDA GPU or the HiP CUDA kernels were not built (" << ::hipstudio::hip_torch::cuda_kernels_status() \
               << "); run the gpu-labelled tests on a GPU machine"
