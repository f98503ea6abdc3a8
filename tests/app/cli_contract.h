#pragma once
// Helpers of the command-line contract tests: run the binary, assert the contract's three parts
// (exit status 2, one `error:` line naming the problem, the user's files untouched).
#include <chrono>
#include <string>

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

}  // namespace hipstudio::testing
