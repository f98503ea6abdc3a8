#pragma once
// Peak device memory of LibTorch's CUDA caching allocator, for benchmarks. Available only when the
// engine is built against a CUDA LibTorch (HIPSTUDIO_TORCH_CUDA); otherwise `available` is false.
#include <cstdint>

namespace hipstudio {

struct DeviceMemoryStats {
  bool available = false;
  uint64_t peak_allocated_bytes = 0;  // since the last reset
  uint64_t reserved_bytes = 0;        // held by the allocator now
};

void reset_peak_device_memory(int device = 0);
DeviceMemoryStats device_memory_stats(int device = 0);

}  // namespace hipstudio
