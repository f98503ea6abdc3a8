// `hipstudio`: a small front for hipstudio-core (the real program, beside it). Loading and
// initialising LibTorch's libraries takes ~0.6 s before main() runs (symbol relocation and operator
// registration: measured with perf), so `hipstudio --version` answers here without them; every other
// command line is handed to hipstudio-core unchanged by exec (same process id, streams and status).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

// The folder of this executable (/proc/self/exe: argv[0] may be a bare name found on PATH).
std::string own_folder(const char* argv0) {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  std::string self = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string(argv0);
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? std::string(".") : self.substr(0, slash);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("hipstudio %s\n", HIPSTUDIO_VERSION);
    return std::fflush(stdout) == 0 ? 0 : 2;
  }
  const std::string core = own_folder(argv[0]) + "/hipstudio-core";
  ::execv(core.c_str(), argv);
  std::fprintf(stderr, "error: cannot run %s (%s): hipstudio-core must sit beside hipstudio; rebuild with scripts/build\n",
               core.c_str(), std::strerror(errno));
  return 1;
}
