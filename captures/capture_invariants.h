#pragma once
// Internal to captures/: the one check of a decoded capture's cross-field invariants, run by the
// reader on every open after each array has been checked for its own dtype, shape and bounds.
#include <string>

#include "captures/capture.h"

namespace hipstudio::captures {

// Throws InputError "<what>: inconsistent capture: field '<name>' ..." for the first invariant that
// does not hold, naming the manifest field or array (the list is in capture_invariants.cpp).
void check_capture_invariants(const Capture& c, const std::string& what);

}  // namespace hipstudio::captures
