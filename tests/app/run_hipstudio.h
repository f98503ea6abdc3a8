#pragma once
// Runs the built hipstudio executable with shell words and collects its exit status and output.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace hipstudio::testing {

struct CommandResult {
  int status = -1;
  std::string out;  // stdout, or stdout + stderr when merged
};

// stderr is discarded unless merge_stderr.
inline CommandResult run_hipstudio(const std::string& args, bool merge_stderr = false) {
  const std::string command = std::string(HIPSTUDIO_BINARY) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CommandResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.out.append(buffer.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

}  // namespace hipstudio::testing
