#pragma once
// Times a span of device work: CUDA events on the GPU (when the CUDA kernels library is built, which
// brings the CUDA runtime), a steady clock after a device synchronization otherwise, a plain steady
// clock on the CPU. stop_seconds() waits for the device.
#include <chrono>
#include <memory>

#include <torch/cuda.h>

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/hip_cuda.h"
#endif

namespace hipstudio {

class DeviceTimer {
 public:
  explicit DeviceTimer(bool cuda) : cuda_(cuda) {
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
    if (cuda_) events_ = std::make_unique<gpu::EventPair>();
#endif
  }

  void start() {
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
    if (events_) return events_->start();
#endif
    if (cuda_) torch::cuda::synchronize();
    start_ = std::chrono::steady_clock::now();
  }

  double stop_seconds() {
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
    if (events_) return events_->stop_ms() * 1e-3;
#endif
    if (cuda_) torch::cuda::synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  bool cuda_;
  std::chrono::steady_clock::time_point start_;
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  std::unique_ptr<gpu::EventPair> events_;
#endif
};

}  // namespace hipstudio
