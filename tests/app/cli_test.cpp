// The hipstudio executable end to end: output streams, exit codes and error messages.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace {

struct CommandResult {
  int status = -1;
  std::string out;  // stdout, or stdout + stderr when merged
};

// Runs hipstudio with `args` (shell words); stderr is discarded unless merge_stderr.
CommandResult run_hipstudio(const std::string& args, bool merge_stderr = false) {
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

TEST(Cli, GenerateGreedyPrintsPromptAndContinuation) {
  CommandResult r = run_hipstudio("generate --prompt 'Once upon a time' --max-tokens 24 --temperature 0");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.", 0), 0u)
      << r.out;
}

TEST(Cli, GenerateReadsThePromptFromAFile) {
  const auto path = std::filesystem::temp_directory_path() / "hipstudio-cli-prompt.txt";
  std::ofstream(path) << "Once upon a time";
  CommandResult r = run_hipstudio("generate --prompt @" + path.string() + " --max-tokens 5");
  std::filesystem::remove(path);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("Once upon a time, there was", 0), 0u) << r.out;
}

TEST(Cli, StatisticsGoToStderr) {
  CommandResult merged = run_hipstudio("generate --prompt 'Once upon a time' --max-tokens 4", true);
  EXPECT_NE(merged.out.find("tok/s"), std::string::npos) << merged.out;
  CommandResult plain = run_hipstudio("generate --prompt 'Once upon a time' --max-tokens 4");
  EXPECT_EQ(plain.out.find("tok/s"), std::string::npos) << plain.out;
}

TEST(Cli, PerplexityPrintsItsFields) {
  CommandResult r = run_hipstudio("ppl --text 'Once upon a time, there was a little girl named Lily.'");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("perplexity: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mean_nll: "), std::string::npos) << r.out;
}

TEST(Cli, BadInputExitsWithStatus2AndAMessage) {
  CommandResult missing = run_hipstudio("generate --model /nonexistent/model.bin --prompt hi", true);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("error: model path '/nonexistent/model.bin' does not exist"), std::string::npos) << missing.out;
  CommandResult empty = run_hipstudio("generate --prompt ''", true);
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.out.find("prompt is empty"), std::string::npos) << empty.out;
  CommandResult no_file = run_hipstudio("ppl --text @/nonexistent/text.txt", true);
  EXPECT_EQ(no_file.status, 2);
  EXPECT_NE(no_file.out.find("cannot open"), std::string::npos) << no_file.out;
}

TEST(Cli, EverySubcommandHasHelp) {
  for (const char* command : {"", "generate", "ppl", "convert", "mask", "bench", "bench generate", "bench mask"}) {
    CommandResult r = run_hipstudio(std::string(command) + " --help");
    EXPECT_EQ(r.status, 0) << command;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << command << ": " << r.out;
  }
}

}  // namespace
