#pragma once
// The run boundary for allocations that fail despite the estimate (other processes took the memory,
// fragmentation, an estimate too low): LibTorch's out-of-memory error or std::bad_alloc becomes an
// InputError with the allocator's numbers and the ways out, after the run's tensors are gone and the
// caching allocator has handed its blocks back, so the next run in the same process (the GUI's
// worker, a test) starts from a clean device.
#include <exception>
#include <new>
#include <string>

#include <c10/util/Exception.h>

#include "engine/formats/errors.h"
#include "engine/runtime/device.h"

namespace hipstudio {

// True for LibTorch's out-of-memory errors: c10::OutOfMemoryError (CUDA) and the CPU allocator's
// "can't allocate memory" (a plain c10::Error).
bool is_out_of_memory(const c10::Error& error);

// Releases cached device memory and throws the InputError. `what` names the run ("generate"...),
// `detail` is the allocator's message.
[[noreturn]] void throw_out_of_memory(const RunDevice& run, const std::string& what, const std::string& detail);

// Calls `body` (which owns every tensor of the run, so they are freed when it unwinds) and turns an
// allocation failure into throw_out_of_memory. Other errors pass through unchanged.
template <class Body>
auto guard_out_of_memory(const RunDevice& run, const std::string& what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc& e) {
    throw_out_of_memory(run, what, std::string("host allocation failed (") + e.what() + ")");
  } catch (const c10::Error& e) {
    if (!is_out_of_memory(e)) throw;
    throw_out_of_memory(run, what, e.what_without_backtrace());
  }
}

}  // namespace hipstudio
