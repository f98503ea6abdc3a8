#pragma once
// Shared by the libFuzzer targets: scratch files for parsers that only take a path, and the one
// rule every target applies to exceptions.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/formats/errors.h"

namespace hipstudio::fuzz {

// A folder of this process (/tmp/hipstudio-fuzz-<pid>) whose files are rewritten for every input,
// so that path-only parsers (mmap, ifstream) read exactly the fuzzed bytes. Removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("hipstudio-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

// Writes `size` bytes to scratch_dir()/name and returns its path. A write failure is the machine's
// problem, not a finding: it aborts loudly so that nobody mistakes it for a parser bug.
inline std::string write_scratch(const std::string& name, const void* data, size_t size) {
  const std::string path = (scratch_dir() / name).string();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file || (size > 0 && std::fwrite(data, 1, size, file) != size) || std::fclose(file) != 0) {
    std::fprintf(stderr, "fuzz harness: cannot write %s (disk full?)\n", path.c_str());
    std::abort();
  }
  return path;
}

// A property a correct parser guarantees for every input it accepts; a violation is a finding
// (a silently wrong number), reported like a crash.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace hipstudio::fuzz

// Runs `body`; hipstudio::InputError is the documented answer to bad input and is swallowed, any
// other exception escapes to libFuzzer, which reports it as a crash (uncaught exception -> abort).
// Variadic so that a body with commas stays one argument.
#define HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS(...) \
  try {                                         \
    __VA_ARGS__;                                \
  } catch (const ::hipstudio::InputError&) {    \
  }
