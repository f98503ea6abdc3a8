// The hipstudio executable under hostile conditions: prompts far beyond the context, empty and binary
// prompts, a model folder that disappears mid-run, unwritable output folders and a full disk while
// writing a capture. Each ends with exit status 2 and a message naming the problem and the fix (or a
// normal run), never a crash, and never loses an earlier capture.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "captures/npy.h"
#include "engine/formats/model_source.h"
#include "tests/app/cli_contract.h"
#include "tests/app/run_hipstudio.h"
#include "tests/formats/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using hipstudio::testing::CommandResult;
using hipstudio::testing::read_bytes;
using hipstudio::testing::TempDir;
using hipstudio::testing::write_bytes;

CommandResult run(const std::string& args) { return hipstudio::testing::run_hipstudio(args, /*merge_stderr=*/true); }

// HiP options small enough for stories15M's 256-token context.
const std::string kHip = " --topk 16 --bq 8 --bk 2 --ld 1 --rm 4 --decode 4";
const std::string kPrompt = "'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.'";

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

std::vector<std::string> folder_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A capture and its folder shared by the tests.
struct FailuresCapture {
  static constexpr const char* kFile = "earlier.hipcap";
  static std::string arguments() { return "capture --prompt " + kPrompt + kHip + " --views mask,latency --no-images"; }
};
class Failures : public hipstudio::testing::OneCaptureSuite<FailuresCapture> {
 protected:
  // A folder nobody can write in, and why it is one. As root, permission bits do not stop writes,
  // so /proc (which takes no new files, whoever asks) stands in for a read-only folder there.
  static std::string unwritable_folder(const TempDir& tmp) {
    if (::geteuid() == 0) return "/proc";
    const fs::path ro = tmp.path() / "read-only";
    fs::create_directory(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    return ro.string();
  }

};

// ---- prompts --------------------------------------------------------------------------------------

TEST_F(Failures, PromptFarBeyondTheContextIsRefusedWithTheNumbers) {
  TempDir tmp;
  std::string text;
  for (int i = 0; i < 100'000; ++i) text += "dog ";  // about 100k tokens
  write_bytes(tmp.file("long.txt"), text);
  const std::string at = " --prompt @" + tmp.file("long.txt");
  for (const std::string& command : {"generate" + at, "analyze" + at + kHip + " --json " + tmp.file("a.json"),
                                     "capture" + at + kHip + " --out " + tmp.file("c.hipcap")}) {
    const auto start = std::chrono::steady_clock::now();
    CommandResult r = run(command);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.status, 2) << command << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "error: the prompt has ")) << r.out;
    EXPECT_TRUE(contains(r.out, "but the context is 256 tokens")) << r.out;
    EXPECT_TRUE(contains(r.out, "shorten the prompt")) << r.out;
    EXPECT_LT(seconds, 60.0) << command << ": refusing should not take long";
  }
  EXPECT_EQ(folder_entries(tmp.path()), std::vector<std::string>{"long.txt"});  // no JSON, no capture, no temporary
}

TEST_F(Failures, EmptyPromptIsRefused) {
  TempDir tmp;
  write_bytes(tmp.file("empty.txt"), "");
  for (const std::string& prompt : {std::string("''"), "@" + tmp.file("empty.txt")}) {
    for (const std::string& command : {"generate --prompt " + prompt, "ppl --text " + prompt,
                                       "analyze --prompt " + prompt + kHip + " --json " + tmp.file("a.json"),
                                       "capture --prompt " + prompt + kHip + " --out " + tmp.file("c.hipcap")}) {
      CommandResult r = run(command);
      EXPECT_EQ(r.status, 2) << command << "\n" << r.out;
      EXPECT_TRUE(contains(r.out, "empty")) << command << "\n" << r.out;
      EXPECT_TRUE(contains(r.out, "--prompt TEXT or --prompt @FILE") || contains(r.out, "--text")) << r.out;
    }
  }
  EXPECT_EQ(folder_entries(tmp.path()), std::vector<std::string>{"empty.txt"});
}

// Binary garbage (NUL bytes, invalid UTF-8) is still a byte string: the llama2.c tokenizer's byte
// fallback gives every byte a token, so the run works like any other prompt instead of refusing a
// file a user may have meant (a log with stray bytes). It must not crash or stop at the first NUL.
TEST_F(Failures, BinaryGarbageRunsThroughByteFallback) {
  TempDir tmp;
  std::mt19937 rng(7);
  std::string garbage;
  for (int i = 0; i < 120; ++i) garbage += static_cast<char>(rng() & 0xFF);
  garbage[5] = '\0';
  garbage[6] = static_cast<char>(0xC3);  // a lead byte followed by a non-continuation byte: invalid UTF-8
  garbage[7] = 'A';
  write_bytes(tmp.file("garbage.bin"), garbage);
  CommandResult g = run("generate --prompt @" + tmp.file("garbage.bin") + " --max-tokens 8");
  EXPECT_EQ(g.status, 0) << g.out;
  EXPECT_TRUE(contains(g.out, "generated: ")) << g.out;
  CommandResult p = run("ppl --text @" + tmp.file("garbage.bin"));
  EXPECT_EQ(p.status, 0) << p.out;
  // More than 120 tokens: the bytes after the NUL were tokenized too (byte fallback: about one token a byte).
  const size_t at = p.out.find("tokens: ");
  ASSERT_NE(at, std::string::npos) << p.out;
  EXPECT_GT(std::stol(p.out.substr(at + 8)), 60) << p.out;
  // The JSON and the capture hold the prompt's text with U+FFFD for the bytes that are not UTF-8.
  CommandResult a = run("analyze --prompt @" + tmp.file("garbage.bin") + kHip + " --json " + tmp.file("a.json"));
  EXPECT_EQ(a.status, 0) << a.out;
  EXPECT_TRUE(contains(read_bytes(tmp.file("a.json")), "\xEF\xBF\xBD")) << "no U+FFFD in the JSON";
  CommandResult c = run("capture --prompt @" + tmp.file("garbage.bin") + kHip + " --views latency --out " + tmp.file("c.hipcap"));
  EXPECT_EQ(c.status, 0) << c.out;
  CommandResult o = run("open --print " + tmp.file("c.hipcap"));
  EXPECT_EQ(o.status, 0) << o.out;
}

// ---- the model folder disappears mid-run -----------------------------------------------------------

// Starts hipstudio with `args` (no shell) and returns its pid and the read end of its stdout.
pid_t spawn(const std::vector<std::string>& args, int* out_fd) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 2);
    ::close(pipe_fds[0]);
    std::vector<char*> argv{const_cast<char*>(HIPSTUDIO_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(HIPSTUDIO_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  *out_fd = pipe_fds[0];
  return pid;
}

// The loaders copy every weight into LibTorch tensors (llama2.c: one read; safetensors: a clone out of
// the mapping, which is closed after loading), so nothing refers to the files once the prompt is
// echoed: deleting the folder or truncating the checkpoint (which would SIGBUS a live mapping) does
// not disturb the run.
void expect_run_survives(const std::function<void(const fs::path& dir)>& sabotage) {
  TempDir tmp;
  const hipstudio::ModelSource source = hipstudio::resolve_model_source("");
  const fs::path model_dir = tmp.path() / "model";
  fs::create_directory(model_dir);
  fs::copy_file(source.checkpoint, model_dir / "model.bin");
  fs::copy_file(source.tokenizer, model_dir / "tokenizer.bin");
  int out_fd = -1;
  // HiP attention (the float64 CPU reference) keeps the run busy long enough to sabotage it mid-way.
  const pid_t pid = spawn({"generate", "--model", (model_dir / "model.bin").string(), "--prompt", "Once upon a time",
                           "--max-tokens", "200", "--temperature", "0.8", "--seed", "3", "--attention", "hip", "--topk",
                           "16", "--bq", "8", "--bk", "2", "--ld", "1", "--rm", "1"},
                          &out_fd);
  ASSERT_GT(pid, 0);
  std::string out;
  char buffer[256];
  // The prompt is echoed once the run has started (after the first generated token).
  while (out.size() < 4) {
    const ssize_t n = ::read(out_fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  sabotage(model_dir);
  int status = 0;
  const bool running_when_sabotaged = ::waitpid(pid, &status, WNOHANG) == 0;
  ssize_t n;
  while ((n = ::read(out_fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  ::close(out_fd);
  if (running_when_sabotaged) ::waitpid(pid, &status, 0);
  EXPECT_TRUE(running_when_sabotaged) << "the run ended before the model folder was touched; the test proves nothing";
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_EQ(out.rfind("Once upon a time", 0), 0u) << out;
  EXPECT_GT(out.size(), std::string("Once upon a time").size() + 20) << out;
}

TEST(ModelFolderDisappears, DeletedMidRun) {
  expect_run_survives([](const fs::path& dir) { fs::remove_all(dir); });
}

TEST(ModelFolderDisappears, CheckpointTruncatedMidRun) {
  expect_run_survives([](const fs::path& dir) { fs::resize_file(dir / "model.bin", 1000); });
}

// ---- unwritable outputs ------------------------------------------------------------------------------

TEST_F(Failures, UnwritableOutputFolderIsNamedBeforeAnyWork) {
  TempDir tmp;
  const std::string ro = unwritable_folder(tmp);
  // A regular file where a folder is expected fails for root too.
  write_bytes(tmp.file("not-a-folder"), "x");
  hipstudio::captures::write_npy(tmp.file("q.npy"), {1, 16, 8}, std::vector<float>(128, 0.5f));
  for (const std::string& folder : {ro, tmp.file("not-a-folder")}) {
    const std::string out = folder + "/out";
    const std::vector<std::string> commands = {
        "capture --prompt " + kPrompt + kHip + " --out " + out + ".hipcap",
        "report " + capture_ + " --out " + out + ".html",
        "export " + capture_ + " --what latency --format csv --out " + out + ".csv",
        "mask --q " + tmp.file("q.npy") + " --k " + tmp.file("q.npy") + " --topk 4 --bq 4 --bk 2 --out " + folder,
    };
    for (const std::string& command : commands) {
      CommandResult r = run(command);
      EXPECT_EQ(r.status, 2) << command << "\n" << r.out;
      EXPECT_TRUE(contains(r.out, "error: ")) << r.out;
      EXPECT_TRUE(contains(r.out, folder)) << "the folder is not named: " << r.out;
      EXPECT_TRUE(contains(r.out, "choose a writable folder") || contains(r.out, "create it first") ||
                  contains(r.out, "name a folder"))
          << "no fix offered: " << r.out;
    }
  }
  // Nothing half-written beside the inputs, nor beside the capture.
  std::vector<std::string> expected{"not-a-folder", "q.npy"};
  if (::geteuid() != 0) expected.insert(expected.begin() + 1, "read-only");
  EXPECT_EQ(folder_entries(tmp.path()), expected);
  if (::geteuid() != 0) {
    EXPECT_TRUE(folder_entries(ro).empty());
  }
  EXPECT_EQ(folder_entries(dir_->path()), std::vector<std::string>{"earlier.hipcap"});
}

// ---- a full disk while writing -------------------------------------------------------------------------

// Runs `args` with a file-size limit (RLIMIT_FSIZE, `ulimit -f`): writes past `limit_bytes` fail as
// on a full disk (the app ignores SIGXFSZ, so write() returns EFBIG instead of the signal killing it).
CommandResult run_with_file_size_limit(const std::string& args, rlim_t limit_bytes) {
  struct rlimit old_limit;
  ::getrlimit(RLIMIT_FSIZE, &old_limit);
  struct rlimit limit = {limit_bytes, old_limit.rlim_max};
  // The limit is inherited through popen's shell; the test process itself writes nothing meanwhile.
  ::setrlimit(RLIMIT_FSIZE, &limit);
  CommandResult r = run(args);
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  return r;
}

TEST_F(Failures, FullDiskKeepsTheEarlierCaptureByteForByte) {
  const std::string earlier = read_bytes(capture_);
  ASSERT_GT(earlier.size(), 64u * 1024);
  // The same capture written again over the earlier one, with room for only 64 KiB.
  CommandResult r = run_with_file_size_limit(
      "capture --prompt " + kPrompt + kHip + " --views mask,latency,iterations --out " + capture_, 64 * 1024);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "error: " + capture_ + ": write failed")) << r.out;
  EXPECT_TRUE(contains(r.out, "disk full?")) << r.out;
  EXPECT_TRUE(contains(r.out, "nothing was overwritten")) << r.out;
  EXPECT_EQ(read_bytes(capture_), earlier);
  EXPECT_EQ(folder_entries(dir_->path()), std::vector<std::string>{"earlier.hipcap"});  // no temporary left

  // The report beside it, the same way: an earlier report survives too.
  const std::string html = dir_->file("earlier.html");
  ASSERT_EQ(run("report " + capture_ + " --out " + html).status, 0);
  const std::string earlier_html = read_bytes(html);
  CommandResult rep = run_with_file_size_limit("report " + capture_ + " --out " + html, 4 * 1024);
  EXPECT_EQ(rep.status, 2) << rep.out;
  EXPECT_TRUE(contains(rep.out, "disk full?")) << rep.out;
  EXPECT_EQ(read_bytes(html), earlier_html);
  fs::remove(html);
  EXPECT_EQ(folder_entries(dir_->path()), std::vector<std::string>{"earlier.hipcap"});
}

}  // namespace
