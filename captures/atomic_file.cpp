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
#include <stdexcept>

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

AtomicOutput::AtomicOutput(const std::string& path) {
  ignore_file_size_signal();
  const OutputTarget t = resolve_output(path, "");
  shown_ = t.path == path ? path : path + " (a link to " + t.path + ")";
  target_ = t.path;
  if (t.kind == OutputKind::InPlace) {
    // A device or FIFO: opened for writing and written; no temporary, no rename, no fsync (a FIFO
    // or a terminal has none).
    in_place_ = true;
    fd_ = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) {
      const std::string reason = std::strerror(errno);
      throw InputError(shown_ + ": cannot open the device or FIFO " + target_ + " for writing (" + reason +
                       "); name a regular file, or check its permissions");
    }
    return;
  }
  struct stat st {};
  existed_ = t.kind == OutputKind::RegularFile && ::stat(target_.c_str(), &st) == 0;
  mode_ = static_cast<unsigned>(st.st_mode);
  // mkstemp names and creates the temporary in one step (std::random_device crashes beside
  // PyTorch's LibTorch wheels, and a fixed name would race with a second writer).
  tmp_ = target_ + ".tmp-XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) throw_cannot_create_in(shown_, folder_of(target_));
}

AtomicOutput::~AtomicOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicOutput::fail(const char* what) {
  const std::string reason = std::strerror(errno);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (in_place_) throw InputError(shown_ + ": " + what + " " + target_ + " failed (" + reason + "): the output is incomplete");
  ::unlink(tmp_.c_str());
  tmp_.clear();
  throw InputError(shown_ + ": " + what + " (" + reason + "; disk full?); nothing was overwritten: free disk space in " +
                   folder_of(target_) + " or choose another location");
}

void AtomicOutput::write(std::string_view bytes) {
  if (fd_ < 0) throw std::logic_error("AtomicOutput::write after commit or failure");
  if (!write_all(fd_, bytes)) fail(in_place_ ? "writing to" : "write failed");
}

void AtomicOutput::commit() {
  if (fd_ < 0) throw std::logic_error("AtomicOutput::commit twice or after failure");
  if (in_place_) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw InputError(shown_ + ": closing " + target_ + " failed (" + std::strerror(errno) + ")");
    return;
  }
  if (::fsync(fd_) != 0) fail("flushing to disk failed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing failed");
  // mkstemp creates 0600; a new capture or export is an ordinary 0644 file, a replaced one keeps its bits.
  ::chmod(tmp_.c_str(), existed_ ? (mode_ & 07777) : 0644);
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0) fail("renaming the finished file into place failed");
  tmp_.clear();
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicOutput out(path);
  out.write(bytes);
  out.commit();
}

}  // namespace hipstudio::captures
