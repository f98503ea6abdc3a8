#include "engine/runtime/device.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include "engine/formats/errors.h"

namespace hipstudio {

bool cuda_available() { return torch::cuda::is_available(); }

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat: return "f32";
    case c10::kBFloat16: return "bf16";
    case c10::kHalf: return "f16";
    default: return c10::toString(dtype);
  }
}

c10::ScalarType parse_dtype(const std::string& dtype) {
  if (dtype == "f32" || dtype == "fp32" || dtype == "float32") return c10::kFloat;
  if (dtype == "bf16" || dtype == "bfloat16") return c10::kBFloat16;
  if (dtype == "f16" || dtype == "fp16" || dtype == "float16") return c10::kHalf;
  throw InputError("unknown dtype '" + dtype + "' (use f32, bf16 or f16)");
}

RunDevice parse_run_device(const std::string& device, const std::string& dtype) {
  RunDevice run;
  run.dtype = parse_dtype(dtype);

  if (device == "cpu") {
    run.device = c10::Device(c10::kCPU);
    if (run.dtype == c10::kHalf)
      throw InputError("f16 is not supported on the CPU (LibTorch has no CPU f16 matrix products); "
                       "use --dtype f32 or bf16 on the CPU, or --device cuda");
    return run;
  }
  if (device.rfind("cuda", 0) == 0) {
    if (!cuda_available())
      throw InputError("--device cuda was asked for, but " +
                       std::string(torch::cuda::device_count() == 0 && !at::hasCUDA()
                                       ? "this LibTorch build has no CUDA support"
                                       : "no CUDA GPU is visible") +
                       "; use --device cpu, or build against a CUDA LibTorch on a machine with a GPU (README: GPU build)");
    try {
      run.device = c10::Device(device);
    } catch (const c10::Error&) {
      throw InputError("cannot parse device '" + device + "' (use cuda or cuda:N)");
    }
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    if (run.device.has_index() && run.device.index() >= count)
      throw InputError("device " + device + " does not exist: this machine has " + std::to_string(count) + " GPU(s)");
    if (!run.device.has_index()) run.device = c10::Device(c10::kCUDA, 0);
    return run;
  }
  throw InputError("unknown device '" + device + "' (use cpu or cuda)");
}

std::string device_description(const RunDevice& run) {
  std::string where = run.device.str();
  if (run.device.is_cpu()) {
    const int n = at::get_num_threads();
    where += " (" + std::to_string(n) + (n == 1 ? " thread)" : " threads)");
  }
  return where + ", " + dtype_name(run.dtype);
}

}  // namespace hipstudio
