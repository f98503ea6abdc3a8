#pragma once
// Helpers of the command-line contract tests: run the binary, assert the contract's three parts
// (exit status 2, one `error:` line naming the problem, the user's files untouched).
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/app/run_hipstudio.h"
#include "tests/formats/temp_dir.h"

namespace hipstudio::testing {

inline CommandResult run_merged(const std::string& args) { return run_hipstudio(args, /*merge_stderr=*/true); }

inline bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// Status 2, an `error:` line holding every needle, and no sign that the model was loaded or the run
// started (ModelOptions::load prints "model: ...", runs print progress lines).
inline void expect_refused_early(const std::string& args, const std::vector<std::string>& needles) {
  const CommandResult r = run_merged(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  EXPECT_TRUE(has(r.out, "error: ")) << args << "\n" << r.out;
  for (const std::string& n : needles) EXPECT_TRUE(has(r.out, n)) << args << ": no '" << n << "' in\n" << r.out;
  EXPECT_FALSE(has(r.out, "model: ")) << args << ": the model was loaded before the refusal\n" << r.out;
  EXPECT_FALSE(has(r.out, "%")) << args << ": a progress line came before the refusal\n" << r.out;
}

// A shell line (a FIFO needs a reader beside the writer; umask, ulimit and redirections the plain
// runner cannot express); stdout and stderr together, the status as run_hipstudio's.
inline CommandResult run_shell(const std::string& line) {
  CommandResult r;
  FILE* pipe = popen(("{ " + line + "; } 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// A suite sharing one capture (the model run is the slow part): `hipstudio <Made::arguments()> --out
// <dir_>/<Made::kFile>` runs once before its tests, and each test asserts that it succeeded.
template <class Made>
class OneCaptureSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    capture_ = dir_->file(Made::kFile);
    setup_ = run_merged(Made::arguments() + " --out " + capture_);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(setup_.status, 0) << setup_.out; }

  inline static TempDir* dir_ = nullptr;
  inline static std::string capture_;
  inline static CommandResult setup_;
};

}  // namespace hipstudio::testing
