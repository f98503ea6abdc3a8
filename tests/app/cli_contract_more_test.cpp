// The command line's contract, continued: stale messages and help texts, the tokenizer format, write
// errors on stdout, the small inaccuracies, the README's example, and the general rules (every
// numeric option range-checked, progress lines, a fast --version).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
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
using hipstudio::testing::run_hipstudio;
using hipstudio::testing::run_merged;
using hipstudio::testing::run_shell;
using hipstudio::testing::TempDir;
using hipstudio::testing::write_bytes;

const std::string kHip = " --topk 16 --bq 8 --bk 2 --ld 1 --rm 4";

bool gpu_present() { return fs::exists("/dev/nvidia0"); }

// Defect 7: stale messages and internal words in the help.
TEST(CliContractMessages, MessagesAndHelpSayWhatIsTrueHere) {
  if (!gpu_present()) {
    const CommandResult mask = run_merged("bench mask --device cuda --tokens 1024");
    EXPECT_EQ(mask.status, 2) << mask.out;
    EXPECT_TRUE(has(mask.out, "error: bench mask --device cuda needs an NVIDIA GPU, and none is usable on this machine") ||
                has(mask.out, "error: bench mask --device cuda times the CUDA HiP kernels, and this build has none"))
        << mask.out;
    EXPECT_FALSE(has(mask.out, "not built yet")) << mask.out;
    const CommandResult kernels = run_merged("bench kernels");
    EXPECT_EQ(kernels.status, 2) << kernels.out;
    // A build with the kernels says no GPU is here; one without them (the sanitizer job's CPU
    // configuration) says the build has none.
    EXPECT_TRUE(kernels.out.rfind("error: bench kernels needs an NVIDIA GPU, and none is usable on this machine", 0) == 0 ||
                kernels.out.rfind("error: bench kernels times the CUDA HiP kernels, and this build has none", 0) == 0)
        << kernels.out;
  }
  TempDir tmp;
  write_bytes(tmp.file("file"), "mine");
  const CommandResult convert = run_merged("convert --out " + tmp.file("file"));
  EXPECT_EQ(convert.status, 2) << convert.out;
  EXPECT_TRUE(has(convert.out, "is a file, and convert writes a folder")) << convert.out;
  EXPECT_FALSE(has(convert.out, "not an empty directory")) << convert.out;
  EXPECT_EQ(read_bytes(tmp.file("file")), "mine");

  for (const std::string command : {"", "generate", "ppl", "convert", "mask", "analyze", "capture", "report", "export", "open",
                                    "bench", "bench generate", "bench model", "bench mask", "bench kernels"}) {
    const CommandResult help = run_hipstudio(command + " --help");
    EXPECT_EQ(help.status, 0) << command;
    EXPECT_TRUE(has(help.out, "Usage: hipstudio " + command)) << "Usage shows a path? " << help.out;
    for (const char* internal : {"speed targets", "GUI target", "/build/"}) EXPECT_FALSE(has(help.out, internal)) << command << ": " << internal;
  }
  const CommandResult bench = run_hipstudio("bench mask --tokens 64,128 --topk 16 --bq 8 --repeats 1 --dense-blocks 1");
  EXPECT_EQ(bench.status, 0) << bench.out;
  EXPECT_FALSE(has(bench.out, "GUI target")) << bench.out;
}

// Defect 8: the tokenizer's format comes from the file, not from the model's format.
TEST(CliContractTokenizer, EitherTokenizerFileWorksWithEitherModelFormat) {
  TempDir tmp;
  const std::string hf = tmp.file("hf");
  const CommandResult convert = run_merged("convert --out " + hf);
  ASSERT_EQ(convert.status, 0) << convert.out;
  const hipstudio::ModelSource source = hipstudio::resolve_model_source("");
  const std::string expected = run_hipstudio("generate --prompt 'Once upon a time' --max-tokens 8").out;
  ASSERT_EQ(expected.rfind("Once upon a time", 0), 0u) << expected;
  // llama2.c model, Hugging Face tokenizer.json; Hugging Face model, llama2.c tokenizer.bin.
  for (const std::string& args : {" --tokenizer " + hf + "/tokenizer.json", " --model " + hf + " --tokenizer " + source.tokenizer}) {
    const CommandResult r = run_hipstudio("generate --prompt 'Once upon a time' --max-tokens 8" + args);
    EXPECT_EQ(r.status, 0) << args << "\n" << run_merged("generate --prompt 'Once upon a time' --max-tokens 8" + args).out;
    EXPECT_EQ(r.out, expected) << args;
  }
}

// Defect 9: a full stdout was reported as success.
TEST(CliContractOutput, AFullStdoutIsAnError) {
  for (const std::string& args : {std::string("generate --prompt 'Once upon a time' --max-tokens 4"), std::string("ppl --text 'Once upon a time'")}) {
    const CommandResult r = run_shell(std::string(HIPSTUDIO_BINARY) + " " + args + " >/dev/full");
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "error: writing the output to stdout failed (No space left on device)")) << r.out;
  }
}

// A float32 [h, t, d] .npy file, by hand (the format mask reads; values with some structure).
std::string npy_f32(int h, int t, int d) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(h) + ", " + std::to_string(t) + ", " +
                       std::to_string(d) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xFF) +
                    static_cast<char>(header.size() >> 8) + header;
  for (int i = 0; i < h * t * d; ++i) {
    const float v = 0.01f * static_cast<float>((i * 7) % 17);
    npy.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return npy;
}

// Defect 10, `mask`: the "wrote" line names every file; a failed run leaves no --out folder.
TEST(CliContractSmall, MaskNamesEveryFileAndAFailedRunLeavesNothing) {
  TempDir tmp;
  const std::string q = tmp.file("q.npy"), big = tmp.file("big.npy");
  write_bytes(q, npy_f32(1, 16, 8));
  write_bytes(big, npy_f32(4, 512, 8));
  const CommandResult ok = run_merged("mask --q " + q + " --k " + q + " --topk 4 --bq 4 --bk 2 --out " + tmp.file("out"));
  ASSERT_EQ(ok.status, 0) << ok.out;
  for (const char* name : {"mask.npy", "oracle_mask.npy", "random_mask.npy", "dense_from.npy", "metrics.json"}) {
    EXPECT_TRUE(has(ok.out, name)) << name << " not in: " << ok.out;
    EXPECT_TRUE(fs::exists(tmp.file("out") + "/" + name)) << name;
  }
  write_bytes(tmp.file("p.npy"), "not an npy file");
  const CommandResult bad = run_merged("mask --q " + q + " --k " + q + " --positions " + tmp.file("p.npy") +
                                       " --topk 4 --bq 4 --bk 2 --out " + tmp.file("never"));
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_FALSE(fs::exists(tmp.file("never"))) << "a failed run left its --out folder";
  // A write that fails half-way (a 2-block file-size limit stands in for a full disk): what was
  // written and the folder the run created are removed.
  const CommandResult full = run_shell("ulimit -f 2; " + std::string(HIPSTUDIO_BINARY) + " mask --q " + big + " --k " + big +
                                       " --topk 8 --bq 4 --bk 2 --out " + tmp.file("half"));
  EXPECT_EQ(full.status, 2) << full.out;
  EXPECT_TRUE(has(full.out, "write failed")) << full.out;
  EXPECT_FALSE(fs::exists(tmp.file("half"))) << "a failed write left its --out folder";
  // An output file that is an input: --q named mask.npy inside --out.
  const CommandResult clash = run_merged("mask --q " + tmp.file("out/mask.npy") + " --k " + q + " --topk 4 --bq 4 --bk 2 --out " + tmp.file("out"));
  EXPECT_EQ(clash.status, 2) << clash.out;
  EXPECT_TRUE(has(clash.out, "is --q itself")) << clash.out;
}

// Defect 10, `convert`: the folder gets the umask's permissions (it was 0700), and a capture's
// summary says its dtype once and "1 thread"; --model-hash must be hex.
TEST(CliContractSmall, ConvertPermissionsOpenSummaryAndModelHash) {
  TempDir tmp;
  const CommandResult convert = run_shell("umask 022; " + std::string(HIPSTUDIO_BINARY) + " convert --out " + tmp.file("hf"));
  ASSERT_EQ(convert.status, 0) << convert.out;
  EXPECT_EQ(fs::status(tmp.file("hf")).permissions() & fs::perms::all, static_cast<fs::perms>(0755));

  expect_refused_early("capture --prompt hi" + kHip + " --model-hash xyz --out " + tmp.file("c.hipcap"),
                       {"--model-hash 'xyz' is not a SHA-256"});
  const CommandResult capture = run_merged("capture --prompt 'Once upon a time'" + kHip + " --views latency --no-images --threads 1 --out " +
                                           tmp.file("c.hipcap"));
  ASSERT_EQ(capture.status, 0) << capture.out;
  const CommandResult open = run_merged("open --print " + tmp.file("c.hipcap"));
  ASSERT_EQ(open.status, 0) << open.out;
  EXPECT_TRUE(has(open.out, "device: cpu (1 thread), f32\n")) << open.out;
  EXPECT_FALSE(has(open.out, "dtype f32")) << open.out;
}

// Defect 10, --threads: 0 means every core for every command; list defaults are comma-separated.
TEST(CliContractSmall, ThreadsZeroIsAllCoresAndListsShowCommas) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const CommandResult r = run_merged("generate --prompt 'Once upon a time' --max-tokens 1 --threads 0");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "on cpu (" + std::to_string(cores) + (cores == 1 ? " thread)" : " threads)"))) << r.out;
  for (const std::string command : {"generate", "mask", "bench mask"})
    EXPECT_TRUE(has(run_hipstudio(command + " --help").out, "0 = all cores")) << command;
  EXPECT_TRUE(has(run_hipstudio("bench mask --help").out, "1024,4096,16384,65536")) << run_hipstudio("bench mask --help").out;
  EXPECT_TRUE(has(run_hipstudio("capture --help").out, "mask,iterations,locality,cache,latency"));
}

// Defect 10, locality plots: they draw the first 3 heads; the caption and title say so.
TEST(CliContractSmall, LocalityPlotsSayWhichHeadsTheyDraw) {
  TempDir tmp;
  const CommandResult capture = run_merged("capture --prompt 'Once upon a time, there was a little girl named Lily.'" + kHip +
                                           " --views locality --no-images --quiet --out " + tmp.file("c.hipcap"));
  ASSERT_EQ(capture.status, 0) << capture.out;
  const CommandResult report = run_merged("report " + tmp.file("c.hipcap") + " --png-dir " + tmp.file("figs"));
  ASSERT_EQ(report.status, 0) << report.out;
  const std::string svg = read_bytes(tmp.file("figs") + "/locality_L1.svg");
  ASSERT_FALSE(svg.empty());
  EXPECT_TRUE(has(svg, "Score locality, layer 1, heads 0-2 of 6")) << svg.substr(0, 2000);
  EXPECT_TRUE(has(read_bytes(tmp.file("c.html")), "heads 0-2 of 6"));
}

// Defect 11: the README's capture example, on the shipped default prompt, shows HiP at work.
TEST(CliContractReadme, TheDefaultPromptShowsHipAtWork) {
  const std::string readme = read_bytes(std::string(HIPSTUDIO_SOURCE_DIR) + "/README.md");
  const std::string example = "capture --prompt @assets/prompts/default.txt --topk 16 --bq 8 --bk 2 --ld 1 --rm 4 --decode 6";
  ASSERT_TRUE(has(readme, example)) << "the README's example changed; update this test with it";
  TempDir tmp;
  const CommandResult r = run_merged("capture --prompt @" + std::string(HIPSTUDIO_SOURCE_DIR) +
                                     "/assets/prompts/default.txt --topk 16 --bq 8 --bk 2 --ld 1 --rm 4 --decode 6 --quiet --out " +
                                     tmp.file("run.hipcap"));
  ASSERT_EQ(r.status, 0) << r.out;
  const hipstudio::captures::Capture c = hipstudio::captures::read_capture(tmp.file("run.hipcap"));
  EXPECT_GT(c.analysis.prompt_ids.size(), 150u);
  EXPECT_GT(c.analysis.kl, 1e-4);
  double min_recall = 1.0;
  for (const auto& layer : c.analysis.layers)
    if (!layer.dense)
      for (const auto& head : layer.heads) min_recall = std::min(min_recall, head.recall);
  EXPECT_LT(min_recall, 0.99);
  int64_t mask_reads = 0;
  for (const auto& d : c.analysis.decode) mask_reads += d.mask_tokens_accessed;
  EXPECT_GT(mask_reads, 0);
}

// General rule: every numeric option of every command is range-checked by the shared option layer:
// an absurd value is an `error:` naming the option, with status 2, before any work.
TEST(CliContractRules, EveryNumericOptionIsRangeChecked) {
  // The numeric options, as each command's help lists them (CLI11 shows INT / UINT / FLOAT).
  std::vector<std::pair<std::string, std::string>> cases;
  for (const std::string command : {"", "generate", "ppl", "convert", "mask", "analyze", "capture", "report", "export", "open",
                                    "bench generate", "bench model", "bench mask", "bench kernels"}) {
    std::istringstream help(run_hipstudio(command + " --help").out);
    const std::regex numeric(R"(^\s+(--[a-z-]+)\s+(INT|UINT|FLOAT)\b)");
    std::string line;
    std::smatch m;
    while (std::getline(help, line))
      if (std::regex_search(line, m, numeric)) cases.emplace_back(command, m[1]);
  }
  ASSERT_GT(cases.size(), 50u);
  // Each start pays LibTorch's ~0.6 s load: four at a time.
  std::vector<CommandResult> results(cases.size());
  for (size_t begin = 0; begin < cases.size(); begin += 4) {
    std::vector<std::thread> batch;
    for (size_t i = begin; i < std::min(cases.size(), begin + 4); ++i)
      batch.emplace_back([&, i] { results[i] = run_merged(cases[i].first + " " + cases[i].second + " -99999999999"); });
    for (std::thread& t : batch) t.join();
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [command, option] = cases[i];
    EXPECT_EQ(results[i].status, 2) << command << " " << option << "\n" << results[i].out;
    EXPECT_EQ(results[i].out.rfind("error: " + option + ": ", 0), 0u) << command << " " << option << "\n" << results[i].out;
  }
}

// General rule: progress lines rewrite themselves (\r) only on a terminal; --quiet prints none.
TEST(CliContractRules, ProgressLinesOffATerminalAndQuiet) {
  TempDir tmp;
  write_bytes(tmp.file("prompt.txt"), "Once upon a time, there was a little girl.");
  const std::string run = "analyze --prompt @" + tmp.file("prompt.txt") + kHip + " --json " + tmp.file("a.json");
  const CommandResult piped = run_merged(run);
  ASSERT_EQ(piped.status, 0) << piped.out;
  EXPECT_TRUE(has(piped.out, "analyze: ")) << piped.out;
  EXPECT_FALSE(has(piped.out, "\r")) << "a carriage return into a pipe";
  const CommandResult quiet = run_merged(run + " --quiet");
  ASSERT_EQ(quiet.status, 0) << quiet.out;
  EXPECT_FALSE(has(quiet.out, "analyze: ")) << quiet.out;
  EXPECT_TRUE(has(quiet.out, "dense ppl")) << "results still print: " << quiet.out;
  // On a terminal (script(1) gives the command one), the line is rewritten in place.
  if (std::system("command -v script >/dev/null 2>&1") == 0) {
    const CommandResult tty = run_shell("script -qec \"" + std::string(HIPSTUDIO_BINARY) + " " + run + "\" /dev/null");
    EXPECT_EQ(tty.status, 0) << tty.out;
    EXPECT_TRUE(has(tty.out, "\ranalyze: ")) << tty.out;
  }
}

// General rule: `hipstudio --version` answers without loading LibTorch (it took 0.6-0.8 s).
TEST(CliContractRules, VersionIsFast) {
  run_hipstudio("--version");  // page cache warm
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = run_hipstudio("--version");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(std::regex_match(r.out, std::regex("hipstudio [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << r.out;
  EXPECT_LT(seconds, 0.2) << "--version took " << seconds << " s";
}

}  // namespace
