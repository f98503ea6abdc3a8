// The command line's contract (docs/CLI.md, "Exit statuses and errors"), one test per
// defect found: every input error is `error: ...` with exit status 2, checked before the work, and
// nothing the user has is overwritten. Model-free cases first; those needing a capture share one.
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "captures/capture.h"
#include "engine/formats/model_source.h"
#include "tests/app/cli_contract.h"

namespace {

namespace fs = std::filesystem;
using hipstudio::testing::CommandResult;
using hipstudio::testing::expect_refused_early;
using hipstudio::testing::has;
using hipstudio::testing::read_bytes;
using hipstudio::testing::run_merged;
using hipstudio::testing::TempDir;
using hipstudio::testing::write_bytes;

const std::string kHip = " --topk 16 --bq 8 --bk 2 --ld 1 --rm 4 --decode 4";

// One small capture shared by the tests that need an input capture (the model run is the slow part).
class CliContract : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    capture_ = dir_->file("run.hipcap");
    setup_ = run_merged("capture --prompt 'Once upon a time, there was a little girl named Lily.'" + kHip +
                        " --views mask,latency --no-images --out " + capture_);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(setup_.status, 0) << setup_.out; }
  // The capture is the user's: every refusal must leave it byte for byte.
  void expect_capture_untouched(const std::string& bytes) const { EXPECT_EQ(read_bytes(capture_), bytes) << "the capture changed"; }

  static TempDir* dir_;
  static std::string capture_;
  static CommandResult setup_;
};
TempDir* CliContract::dir_ = nullptr;
std::string CliContract::capture_;
CommandResult CliContract::setup_;

// Defect 1: CLI11's parse errors went out as 105/106/109/114 without `error:`.
TEST(CliContractParse, ParseErrorsAreErrorLinesWithStatus2) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"analyze --prompt hi --json /tmp/never.json --decode -1", "--decode: -1 is out of range"},
      {"analyze --json /tmp/never.json", "--prompt is required"},
      {"analyze --prompt hi --json /tmp/never.json --no-such-option", "error: unknown option --no-such-option ("},
      {"capture --prompt hi --out /tmp/never.hipcap --views bogus", "'bogus' is not one of mask, iterations"},
      {"generate --prompt hi --max-tokens many", "'many' is not an integer"},
      {"no-such-command", "error: unknown command no-such-command"},
      {"genrate --prompt hi", "error: unknown command genrate (did you mean generate?)"},
      // The option is named, not its value after it, and not in CLI11's reversed order ("3 --max-token").
      {"generate --prompt hi --max-token 3", "error: unknown option --max-token (did you mean --max-tokens?)"},
      {"generate --prompt hi --seed 1 --seed 2", "error: option --seed given more than once"},
      // A misspelt option is named before the required one it leaves missing.
      {"analyze --promt hi --json /tmp/never.json", "unknown option --promt (did you mean --prompt?) (then: --prompt is required)"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult r = run_merged(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("error: ", 0), 0u) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, message)) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "--help`")) << "no pointer to the help: " << r.out;
    EXPECT_LT(r.out.size(), 300u) << "a range of hundreds of digits? " << r.out;
  }
  EXPECT_FALSE(fs::exists("/tmp/never.json"));
}

// Defect 2: outputs could replace the input capture (directly, through the default report name,
// or through a symbolic link).
TEST_F(CliContract, NoOutputMayBeTheInputCapture) {
  const std::string bytes = read_bytes(capture_);
  TempDir tmp;
  const std::string html_named = tmp.file("c1.html");
  write_bytes(html_named, bytes);
  const std::string link = tmp.file("link.hipcap");
  fs::create_symlink(capture_, link);
  const std::vector<std::string> commands = {
      "report " + capture_ + " --out " + capture_,
      "report " + capture_ + " --json " + capture_,
      "report " + capture_ + " --chrome-trace " + link,
      "export " + capture_ + " --what latency --format csv --out " + capture_,
      "export " + capture_ + " --what latency --format csv --out " + link,
      "report " + capture_ + " --out " + tmp.file("r.html") + " --json " + tmp.file("r.html"),
  };
  for (const std::string& c : commands) {
    const CommandResult r = run_merged(c);
    EXPECT_EQ(r.status, 2) << c << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "error: ")) << r.out;
    EXPECT_TRUE(has(r.out, "choose another output name") || has(r.out, "give each its own name")) << c << "\n" << r.out;
    expect_capture_untouched(bytes);
  }
  // A capture named c1.html: its default report name is itself.
  const CommandResult r = run_merged("report " + html_named);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "error: the report (the capture's name with .html; choose another with --out)")) << r.out;
  EXPECT_EQ(read_bytes(html_named), bytes);
  EXPECT_FALSE(fs::exists(tmp.file("r.html")));
}

// Defect 2, the general rule: the model's files are inputs too (a copy: the test must never risk the cache).
TEST(CliContractInputs, NoOutputMayBeTheModelOrItsTokenizer) {
  TempDir tmp;
  const hipstudio::ModelSource source = hipstudio::resolve_model_source("");
  fs::copy_file(source.checkpoint, tmp.file("model.bin"));
  fs::copy_file(source.tokenizer, tmp.file("tokenizer.bin"));
  const std::string model = read_bytes(tmp.file("model.bin")), tokenizer = read_bytes(tmp.file("tokenizer.bin"));
  const std::string m = " --model " + tmp.file("model.bin");
  expect_refused_early("analyze" + m + " --prompt hi" + kHip + " --json " + tmp.file("model.bin"), {"is the model itself"});
  expect_refused_early("capture" + m + " --prompt hi" + kHip + " --out " + tmp.file("tokenizer.bin"), {"is the tokenizer itself"});
  EXPECT_EQ(read_bytes(tmp.file("model.bin")), model);
  EXPECT_EQ(read_bytes(tmp.file("tokenizer.bin")), tokenizer);
}

// Defect 3: checks that ran only after the whole analysis now come before the model loads.
TEST(CliContractEarly, OptionsAndOutputsAreCheckedBeforeTheModelLoads) {
  TempDir tmp;
  const std::string json = " --json " + tmp.file("a.json");
  expect_refused_early("analyze --prompt hi" + kHip + " --json /nonexistent_dir/x.json", {"/nonexistent_dir", "create it first"});
  expect_refused_early("analyze --prompt hi" + kHip + json + " --mask-bank -5", {"--mask-bank: -5 is out of range"});
  expect_refused_early("analyze --prompt hi" + kHip + json + " --sa-bank -5", {"--sa-bank: -5 is out of range"});
  expect_refused_early("analyze --prompt hi --topk 2000000000" + json, {"--topk: 2000000000 is out of range"});
  expect_refused_early("capture --prompt hi" + kHip + " --trace 9:0:0 --out " + tmp.file("c.hipcap"),
                       {"--trace 9:0:0 names layer 9", "6 layers, 0..5"});
  expect_refused_early("capture --prompt hi" + kHip + " --inputs-layers 1,7 --out " + tmp.file("c.hipcap"),
                       {"--inputs-layers names layer 7", "6 layers, 0..5"});
  expect_refused_early("capture --prompt 'Once upon a time'" + kHip + " --trace 1:9:0 --out " + tmp.file("c.hipcap"),
                       {"names head 9", "0..5"});
  expect_refused_early("capture --prompt 'Once upon a time'" + kHip + " --trace 1:0:40 --out " + tmp.file("c.hipcap"),
                       {"names query block 40"});
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

// Defect 4: a folder given where a file is written.
TEST(CliContractEarly, AFolderIsRefusedAsAnOutputFile) {
  TempDir tmp;
  for (const std::string& args : {"analyze --prompt hi" + kHip + " --json " + tmp.path().string(),
                                  "capture --prompt hi" + kHip + " --out " + tmp.path().string()}) {
    expect_refused_early(args, {"is a folder", "name a file"});
    const CommandResult r = run_merged(args);
    EXPECT_FALSE(has(r.out, "disk full")) << r.out;
  }
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

// Defect 5: internal errors (std::bad_alloc, basic_filebuf) leaked with status 1.
TEST_F(CliContract, ImpossibleRequestsAreInputErrorsNotInternalOnes) {
  const std::string bytes = read_bytes(capture_);
  TempDir tmp;
  CommandResult px = run_merged("export " + capture_ + " --what mask --layer 1 --format png --px 100000 --out " + tmp.file("m.png"));
  EXPECT_EQ(px.status, 2) << px.out;
  EXPECT_TRUE(has(px.out, "error: --px: 100000 is out of range: give a value from 0 to 16384")) << px.out;
  CommandResult dir = run_merged("open --print " + tmp.path().string());
  EXPECT_EQ(dir.status, 2) << dir.out;
  EXPECT_TRUE(has(dir.out, "error: the capture " + tmp.path().string() + " is a folder: name a file")) << dir.out;
  for (const CommandResult* r : {&px, &dir}) {
    EXPECT_FALSE(has(r->out, "bad_alloc")) << r->out;
    EXPECT_FALSE(has(r->out, "basic_filebuf")) << r->out;
  }
  EXPECT_TRUE(fs::is_empty(tmp.path()));
  expect_capture_untouched(bytes);
}

// Defect 6: messages named an option the command does not have or that was not used.
TEST(CliContractEarly, MessagesNameTheOptionThatWasUsed) {
  TempDir tmp;
  CommandResult empty = run_merged("ppl --text ''");
  EXPECT_EQ(empty.status, 2) << empty.out;
  EXPECT_TRUE(has(empty.out, "error: --text is empty: pass some text with --text TEXT or --text @FILE")) << empty.out;
  EXPECT_FALSE(has(empty.out, "--prompt")) << empty.out;

  std::string text;
  for (int i = 0; i < 2000; ++i) text += "dog ";
  write_bytes(tmp.file("big.txt"), text);
  CommandResult big = run_merged("ppl --text @" + tmp.file("big.txt"));
  EXPECT_EQ(big.status, 2) << big.out;
  EXPECT_TRUE(has(big.out, "error: the text has ")) << big.out;
  EXPECT_TRUE(has(big.out, "shorten the text (--text), or raise --context")) << big.out;
  EXPECT_FALSE(has(big.out, "--max-tokens")) << big.out;

  expect_refused_early("analyze --prompt hi --decode 100000 --json " + tmp.file("a.json"),
                       {"--decode asks for 100000 more", "lower --decode to at most 254"});
  const CommandResult decode = run_merged("analyze --prompt hi --decode 100000 --json " + tmp.file("a.json"));
  EXPECT_FALSE(has(decode.out, "--max-tokens")) << decode.out;
}

// Defect 10, the decode records: step s feeds generated[s] at position prompt + s, and its record's
// tokens are the choices for the next position, generated[s + 1]; generated[] holds the last choice.
TEST_F(CliContract, DecodeRecordsAndGeneratedTokensLineUp) {
  const hipstudio::captures::Capture c = hipstudio::captures::read_capture(capture_);
  const auto& a = c.analysis;
  ASSERT_EQ(a.decode.size(), 4u);
  ASSERT_EQ(a.dense.generated.size(), a.decode.size() + 1);
  ASSERT_EQ(a.hip.generated.size(), a.decode.size() + 1);
  for (size_t s = 0; s < a.decode.size(); ++s) {
    EXPECT_EQ(a.decode[s].position, static_cast<int64_t>(a.prompt_ids.size() + s));
    EXPECT_EQ(a.decode[s].dense_token, a.dense.generated[s + 1]) << s;
    EXPECT_EQ(a.decode[s].hip_token, a.hip.generated[s + 1]) << s;
  }
  TempDir tmp;
  ASSERT_EQ(run_merged("report " + capture_ + " --out " + tmp.file("r.html")).status, 0);
  EXPECT_TRUE(has(read_bytes(tmp.file("r.html")), "<th>position fed</th>"));
  EXPECT_TRUE(has(read_bytes(tmp.file("r.html")), "<th>dense next token (position + 1)</th>"));
}

}  // namespace
