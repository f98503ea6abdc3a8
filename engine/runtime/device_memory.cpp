#include "engine/runtime/device_memory.h"

#if defined(HIPSTUDIO_TORCH_CUDA) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#define HIPSTUDIO_HAVE_ALLOCATOR_STATS 1
#endif

namespace hipstudio {

void reset_peak_device_memory([[maybe_unused]] int device) {
#ifdef HIPSTUDIO_HAVE_ALLOCATOR_STATS
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
#endif
}

DeviceMemoryStats device_memory_stats([[maybe_unused]] int device) {
  DeviceMemoryStats s;
#ifdef HIPSTUDIO_HAVE_ALLOCATOR_STATS
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  s.available = true;
  s.peak_allocated_bytes = static_cast<uint64_t>(stats.allocated_bytes[0].peak);  // [0]: aggregate over pools
  s.reserved_bytes = static_cast<uint64_t>(stats.reserved_bytes[0].current);
#endif
  return s;
}

uint64_t device_free_bytes([[maybe_unused]] int device) {
#ifdef HIPSTUDIO_HAVE_ALLOCATOR_STATS
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));  // cudaMemGetInfo asks the current device
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error so LibTorch's next call does not report it
    return 0;
  }
  int64_t cached = 0;
  try {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    cached = stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
  } catch (const c10::Error&) {
    // The allocator starts lazily, at the first CUDA tensor: before that it holds nothing.
  }
  return static_cast<uint64_t>(free) + static_cast<uint64_t>(cached > 0 ? cached : 0);
#else
  return 0;
#endif
}

void release_cached_device_memory() {
#ifdef HIPSTUDIO_HAVE_ALLOCATOR_STATS
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

}  // namespace hipstudio
