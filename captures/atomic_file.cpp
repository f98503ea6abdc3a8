#include "captures/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// What `p` names, the link itself not followed (lstat). False when nothing is there.
bool stat_no_follow(const std::string& p, struct stat& st) { return ::lstat(p.c_str(), &st) == 0; }

// Writes all of `bytes` to `fd`; false with errno set on failure.
bool write_all(int fd, std::string_view bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    written += static_cast<size_t>(n);
  }
  return true;
}

// A device or FIFO: opened for writing and written; no temporary, no rename, no fsync (a FIFO or a
// terminal has none).
void write_in_place(const std::string& shown, const std::string& target, std::string_view bytes) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const std::string reason = std::strerror(errno);
    throw InputError(shown + ": cannot open the device or FIFO " + target + " for writing (" + reason +
                     "); name a regular file, or check its permissions");
  }
  const bool ok = write_all(fd, bytes);
  const std::string reason = ok ? "" : std::strerror(errno);
  if (::close(fd) != 0 && ok) throw InputError(shown + ": closing " + target + " failed (" + std::strerror(errno) + ")");
  if (!ok) throw InputError(shown + ": writing to " + target + " failed (" + reason + "): the output is incomplete");
}

// New or regular `target`: a temporary beside it, flushed, renamed over it.
void write_replacing(const std::string& shown, const std::string& target, bool existed, mode_t mode, std::string_view bytes) {
  // mkstemp names and creates the temporary in one step (std::random_device crashes beside
  // PyTorch's LibTorch wheels, and a fixed name would race with a second writer).
  std::string tmp = target + ".tmp-XXXXXX";
  auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError(shown + ": " + what + " (" + reason + "; disk full?); nothing was overwritten: free disk space in " +
                     folder_of(target) + " or choose another location");
  };
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw_cannot_create_in(shown, folder_of(target));
  if (!write_all(fd, bytes)) {
    ::close(fd);
    fail("write failed");
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("flushing to disk failed");
  }
  if (::close(fd) != 0) fail("closing failed");
  // mkstemp creates 0600; a new capture or export is an ordinary 0644 file, a replaced one keeps its bits.
  ::chmod(tmp.c_str(), existed ? (mode & 07777) : 0644);
  if (std::rename(tmp.c_str(), target.c_str()) != 0) fail("renaming the finished file into place failed");
}

}  // namespace

OutputTarget resolve_output(const std::string& path, const std::string& option) {
  const std::string shown = option.empty() ? path : option + " " + path;
  OutputTarget t;
  t.path = path;
  // Follow the chain of links by hand: realpath() fails on a link to a file not yet written, and
  // that file is what the user asked for.
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (!stat_no_follow(t.path, st)) {
      t.kind = OutputKind::NewFile;
      return t;
    }
    if (S_ISREG(st.st_mode)) {
      t.kind = OutputKind::RegularFile;
      return t;
    }
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
      t.kind = OutputKind::InPlace;
      return t;
    }
    if (S_ISDIR(st.st_mode))
      throw InputError(shown + (t.path == path ? "" : " (a link to " + t.path + ")") +
                       " is a folder, and " + (option.empty() ? std::string("this") : option) +
                       " names a file to write: name a file (inside that folder, say)");
    if (!S_ISLNK(st.st_mode))
      throw InputError(shown + (t.path == path ? "" : " (a link to " + t.path + ")") +
                       " is a socket or another special file that hipstudio does not write to: name a regular file");
    // A link to a pipe, terminal or socket (/dev/stdout -> /proc/self/fd/1 -> "pipe:[123]") names no
    // path: what it reaches is written through the link itself.
    struct stat reached {};
    if (::stat(t.path.c_str(), &reached) == 0 && !S_ISREG(reached.st_mode) && !S_ISDIR(reached.st_mode)) {
      if (S_ISSOCK(reached.st_mode))
        throw InputError(shown + " leads to a socket, which hipstudio does not write to: name a regular file");
      t.kind = OutputKind::InPlace;
      return t;
    }
    if (hops == 40) throw InputError(shown + ": too many levels of symbolic links (a loop?): name a regular file");
    std::string link(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
    const ssize_t n = ::readlink(t.path.c_str(), link.data(), link.size());
    if (n < 0) throw InputError(shown + ": cannot read the symbolic link " + t.path + " (" + std::strerror(errno) + ")");
    link.resize(static_cast<size_t>(n));
    const std::filesystem::path next(link);
    t.path = next.is_absolute() ? link : (std::filesystem::path(t.path).parent_path() / next).string();
  }
}

void check_folder_accepts_files(const std::string& folder, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    throw InputError(what + ": the folder " + folder + " does not exist (or is not a folder); create it first");
  // Create and remove a probe file: the only test that also holds for root, read-only mounts and /proc.
  std::string probe = (std::filesystem::path(folder) / ".hipstudio-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) throw_cannot_create_in(what, folder);
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_writable(const std::string& path, const std::string& option) {
  const OutputTarget t = resolve_output(path, option);
  const std::string shown = option + " " + path;
  if (t.kind == OutputKind::InPlace) {
    if (::access(t.path.c_str(), W_OK) != 0)
      throw InputError(shown + ": the device or FIFO " + t.path + " is not writable (" + std::strerror(errno) +
                       "): name a regular file, or fix its permissions");
    return;
  }
  const std::string what = t.path == path ? shown : shown + " (a link to " + t.path + ")";
  check_folder_accepts_files(folder_of(t.path), what);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  ignore_file_size_signal();
  const OutputTarget t = resolve_output(path, "");
  const std::string shown = t.path == path ? path : path + " (a link to " + t.path + ")";
  if (t.kind == OutputKind::InPlace) return write_in_place(shown, t.path, bytes);
  struct stat st {};
  const bool existed = t.kind == OutputKind::RegularFile && ::stat(t.path.c_str(), &st) == 0;
  write_replacing(shown, t.path, existed, st.st_mode, bytes);
}

}  // namespace hipstudio::captures
