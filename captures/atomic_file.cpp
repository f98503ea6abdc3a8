#include "captures/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sys/stat.h>

#include <filesystem>

#include "engine/formats/errors.h"

namespace hipstudio::captures {

namespace {

// A file-size limit (ulimit -f, RLIMIT_FSIZE) kills a process that writes past it with SIGXFSZ
// unless the signal is ignored; ignored, write() fails with EFBIG and the error below reports it
// like a full disk. Set once, before the first write.
void ignore_file_size_signal() {
  static const bool ignored = [] {
    std::signal(SIGXFSZ, SIG_IGN);
    return true;
  }();
  (void)ignored;
}

std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// The refusal when no file can be created in `folder`; errno holds the reason.
[[noreturn]] void throw_cannot_create_in(const std::string& what, const std::string& folder) {
  const std::string reason = std::strerror(errno);
  throw InputError(what + ": cannot create a file in the folder " + folder + " (" + reason +
                   "); choose a writable folder or fix its permissions");
}

}  // namespace

void check_folder_writable(const std::string& path, const std::string& option) {
  const std::string folder = folder_of(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    throw InputError(option + " " + path + ": the folder " + folder + " does not exist (or is not a folder); create it first");
  // Create and remove a probe file: the only test that also holds for root, read-only mounts and /proc.
  std::string probe = (std::filesystem::path(folder) / ".hipstudio-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) throw_cannot_create_in(option + " " + path, folder);
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  ignore_file_size_signal();
  // mkstemp names and creates the temporary in one step (std::random_device crashes beside
  // PyTorch's LibTorch wheels, and a fixed name would race with a second writer).
  std::string tmp = path + ".tmp-XXXXXX";
  auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError(path + ": " + what + " (" + reason + "; disk full?); nothing was overwritten: free disk space in " +
                     folder_of(path) + " or choose another location");
  };
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw_cannot_create_in(path, folder_of(path));
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
