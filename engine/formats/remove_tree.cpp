#include "engine/formats/remove_tree.h"

#include <ftw.h>
#include <cerrno>
#include <stdio.h>

namespace hipstudio {

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path) == 0 ? 0 : 1; }
}  // namespace

bool remove_tree(const std::string& path) noexcept {
  // Depth first (FTW_DEPTH) so directories are empty when removed; FTW_PHYS never follows links.
  const int status = ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return status == 0 || (status == -1 && errno == ENOENT);
}

}  // namespace hipstudio
