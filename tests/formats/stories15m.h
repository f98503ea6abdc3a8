#pragma once
// Where the tests find stories15M's tokenizer.bin; tests that need it skip when it is absent.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace hipstudio::testing {

inline std::string stories15m_tokenizer_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string cache = xdg && *xdg ? xdg : std::string(home ? home : "") + "/.cache";
  return cache + "/hipstudio/models/stories15M/tokenizer.bin";
}

constexpr int kStories15mVocab = 32000;

}  // namespace hipstudio::testing

#define HIPSTUDIO_REQUIRE_STORIES15M_TOKENIZER()                                            \
  do {                                                                                      \
    if (!std::filesystem::exists(::hipstudio::testing::stories15m_tokenizer_path()))        \
      GTEST_SKIP() << "no " << ::hipstudio::testing::stories15m_tokenizer_path()            \
                   << " (run the model fetch script)";                                      \
  } while (0)
