#include "captures/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sys/stat.h>

#include "engine/formats/errors.h"

namespace hipstudio::captures {

void write_file_atomic(const std::string& path, std::string_view bytes) {
  // mkstemp names and creates the temporary in one step (std::random_device crashes beside
  // PyTorch's LibTorch wheels, and a fixed name would race with a second writer).
  std::string tmp = path + ".tmp-XXXXXX";
  auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError(path + ": " + what + " (" + reason + "); nothing was overwritten: free disk space or choose a writable location");
  };
  const int fd = ::mkstemp(tmp.data());
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
  ::chmod(tmp.c_str(), 0644);  // mkstemp creates 0600; captures and exports are ordinary files
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming the finished file into place failed");
}

}  // namespace hipstudio::captures
