#pragma once
// The refusal of a command that needs the CUDA HiP kernels and a GPU, saying which of the three is
// missing here: kernels in this build, a GPU (with its driver) on this machine, CUDA in LibTorch.
#include <string>

namespace hipstudio::app {

// Throws InputError naming `command` and what is missing; returns when all three are there.
// `cpu_option` says where the command has a CPU path ("--device cpu"), empty when it has none.
void require_cuda_kernels(const std::string& command, const std::string& cpu_option = "");

}  // namespace hipstudio::app
