#pragma once
// Whole-file writes that never leave a half-written file: the bytes go to a temporary file in the
// same directory, are flushed to disk, and the temporary is renamed over the destination. A crash
// or a full disk leaves the earlier file (if any) untouched.
#include <string>
#include <string_view>

namespace hipstudio::captures {

// Throws hipstudio::InputError naming the path and the system's reason (disk full, read-only...).
void write_file_atomic(const std::string& path, std::string_view bytes);

// Before long work whose result goes to `path`: throws InputError (naming `option`, the path, the
// folder and the fix) when the folder does not exist or a file cannot be created in it.
void check_folder_writable(const std::string& path, const std::string& option);

}  // namespace hipstudio::captures
