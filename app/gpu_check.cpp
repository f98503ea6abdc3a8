#include "app/gpu_check.h"

#include <ATen/ATen.h>

#include "engine/formats/errors.h"
#include "kernels/torch/hip_torch.h"

namespace hipstudio::app {

void require_cuda_kernels(const std::string& command, const std::string& cpu_option) {
  const std::string or_cpu = cpu_option.empty() ? "" : ", or use " + cpu_option;
  if (!hip_torch::cuda_kernels_built())
    throw InputError(command + " times the CUDA HiP kernels, and this build has none (nvcc was not found when configuring): "
                     "rebuild on a machine with the CUDA toolkit" + or_cpu);
  const std::string why = hip_torch::cuda_kernels_status();
  // Without a driver the CUDA runtime answers "driver version is insufficient": on a machine with no
  // GPU that reads like an upgrade would help, so say what it means here.
  if (!why.empty())
    throw InputError(command + " needs an NVIDIA GPU, and none is usable on this machine (no GPU or no driver; the CUDA "
                     "runtime says: " + why + "): run it on a machine with an NVIDIA GPU" + or_cpu);
  if (!at::hasCUDA())
    throw InputError(command + " needs a CUDA LibTorch, and this one is CPU-only: build against a CUDA LibTorch "
                     "(README: GPU build)" + or_cpu);
}

}  // namespace hipstudio::app
