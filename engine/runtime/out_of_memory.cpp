#include "engine/runtime/out_of_memory.h"

#include "engine/runtime/device_memory.h"
#include "engine/analysis/memory_estimate.h"

namespace hipstudio {

bool is_out_of_memory(const c10::Error& error) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error)) return true;
  const std::string message = error.what_without_backtrace();
  return message.find("out of memory") != std::string::npos || message.find("can't allocate memory") != std::string::npos ||
         message.find("not enough memory") != std::string::npos;
}

void throw_out_of_memory(const RunDevice& run, const std::string& what, const std::string& detail) {
  // The run's tensors were destroyed while the exception left it; hand their blocks back.
  release_cached_device_memory();
  // LibTorch's message runs over several lines (allocator hints); its first line has the numbers.
  std::string first_line = detail.substr(0, detail.find('\n'));
  // LibTorch 2 goes on, on the same line, with allocator tuning advice that is not this user's fix.
  const size_t advice = first_line.find(" If reserved but unallocated");
  if (advice != std::string::npos) first_line.erase(advice);
  const FreeMemory free = free_memory(run);
  const bool cuda = run.device.is_cuda();
  const uint64_t now_free = cuda ? free.device : free.host;
  std::string fixes = "use a shorter prompt or fewer --max-tokens / --decode steps";
  if (run.dtype == c10::kFloat) fixes += ", --dtype bf16";
  if (cuda) fixes += ", --device cpu, or close other programs using the GPU";
  else fixes += ", or close other programs";
  throw InputError(what + " ran out of memory on " + run.device.str() + ": " + first_line +
                   (now_free > 0 ? " (" + mib_text(now_free) + " free now that the run's memory is released)" : "") +
                   "; nothing was kept from this run: " + fixes);
}

}  // namespace hipstudio
