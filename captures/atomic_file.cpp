#include "captures/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "engine/formats/errors.h"

namespace hipstudio::captures {

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(std::random_device{}());
  auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError(path + ": " + what + " (" + reason + "); nothing was overwritten: free disk space or choose a writable location");
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const std::string reason = std::strerror(errno);
    throw InputError(path + ": cannot create a file there (" + reason + "); choose a writable location");
  }
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail("write failed");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("flushing to disk failed");
  }
  if (::close(fd) != 0) fail("closing failed");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming the finished file into place failed");
}

}  // namespace hipstudio::captures
