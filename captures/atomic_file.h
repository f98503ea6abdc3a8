#pragma once
// Whole-file writes that never leave a half-written file: the bytes go to a temporary file in the
// same directory, are flushed to disk, and the temporary is renamed over the destination. A crash
// or a full disk leaves the earlier file (if any) untouched.
#include <string>
#include <string_view>

namespace hipstudio::captures {

// Throws hipstudio::InputError naming the path and the system's reason (disk full, read-only...).
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace hipstudio::captures
