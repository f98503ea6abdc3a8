#pragma once
// A file's bytes, read-only: memory-mapped when it is a regular file (POSIX mmap; pages are read
// only where a reader looks, so opening a capture touches its manifest and the arrays it parses),
// else read whole (a FIFO or a device cannot be mapped).
#include <string>
#include <string_view>

namespace hipstudio::captures {

class MappedFile {
 public:
  // Throws InputError "PATH: cannot open the capture (reason)".
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return bytes_; }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
  std::string read_;  // the bytes of a file that could not be mapped
  std::string_view bytes_;
};

}  // namespace hipstudio::captures
