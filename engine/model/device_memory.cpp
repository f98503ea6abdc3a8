#include "engine/model/device_memory.h"

#if defined(HIPSTUDIO_TORCH_CUDA) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
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

}  // namespace hipstudio
