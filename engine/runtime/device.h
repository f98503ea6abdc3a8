#pragma once
// Device and dtype choices as the user spells them ("cpu", "cuda", "cuda:1"; "f32", "bf16", "f16"),
// checked against what this LibTorch build and machine can do.
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace hipstudio {

struct RunDevice {
  c10::Device device = c10::Device(c10::kCPU);
  c10::ScalarType dtype = c10::kFloat;
};

// Throws InputError when the device is unknown or unavailable (no CUDA in this LibTorch build, or no
// GPU) or the dtype is unsupported there (f16 matrix products do not exist on CPU in LibTorch 1.13).
RunDevice parse_run_device(const std::string& device, const std::string& dtype);

// "f32" | "bf16" | "f16" (and long spellings) -> dtype; InputError otherwise.
c10::ScalarType parse_dtype(const std::string& dtype);

bool cuda_available();
std::string dtype_name(c10::ScalarType dtype);   // "f32", "bf16", "f16"
std::string device_description(const RunDevice& run);  // "cpu (2 threads), f32" / "cuda:0 (NVIDIA H100 ...), bf16"

}  // namespace hipstudio
