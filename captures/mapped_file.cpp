#include "captures/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/formats/errors.h"

namespace hipstudio::captures {

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open the capture (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      map_ = map;
      size_ = static_cast<size_t>(st.st_size);
      bytes_ = std::string_view(static_cast<const char*>(map_), size_);
      ::close(fd);
      return;
    }
  }
  // Not mappable (a FIFO, a device, an empty file): read it whole.
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw InputError(path + ": read error (" + why + ")");
    }
    read_.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  bytes_ = read_;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

}  // namespace hipstudio::captures
