#pragma once
// LibTorch's CUDA caching allocator: peak statistics for benchmarks, free memory for the checks
// before a run, and handing cached blocks back after an out-of-memory. Available only when the
// engine is built against a CUDA LibTorch (HIPSTUDIO_TORCH_CUDA); otherwise `available` is false,
// device_free_bytes is 0 ("unknown") and release_cached_device_memory does nothing.
#include <cstdint>

namespace hipstudio {

struct DeviceMemoryStats {
  bool available = false;
  uint64_t peak_allocated_bytes = 0;  // since the last reset
  uint64_t reserved_bytes = 0;        // held by the allocator now
};

void reset_peak_device_memory(int device = 0);
DeviceMemoryStats device_memory_stats(int device = 0);

// What a new allocation on `device` can get: the driver's free memory (cudaMemGetInfo) plus what
// the caching allocator has reserved but does not use. 0 when unknown.
uint64_t device_free_bytes(int device = 0);

// Returns the caching allocator's unused blocks to the driver (after a failed allocation, so the
// next run, or another process, can use them).
void release_cached_device_memory();

}  // namespace hipstudio
