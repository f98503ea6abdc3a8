// The hipstudio executable end to end: output streams, exit codes and error messages.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "tests/app/run_hipstudio.h"
#include <nlohmann/json.hpp>

#include "captures/npy.h"
#include "engine/formats/remove_tree.h"

namespace {

using hipstudio::testing::CommandResult;
using hipstudio::testing::run_hipstudio;

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

namespace {

TEST(Cli, AnalyzeWritesTheDocumentedJsonSchema) {
  const auto path = std::filesystem::temp_directory_path() / "hipstudio-cli-analyze.json";
  std::filesystem::remove(path);
  CommandResult r = run_hipstudio(
      "analyze --prompt 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
      "One day, she saw a big red ball in the park.' --topk 16 --bq 8 --bk 2 --ld 1 --rm 3 --decode 7 --json " +
      path.string());
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const char* key : {"dense", "hip", "kl", "top1_agreement", "layers", "decode", "offload", "latency_ms", "params", "model"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_GT(j["dense"]["ppl"].get<double>(), 1.0);
  EXPECT_GT(j["hip"]["ppl"].get<double>(), 1.0);
  ASSERT_EQ(j["layers"].size(), 6u);
  EXPECT_TRUE(j["layers"][0]["dense"].get<bool>());
  EXPECT_FALSE(j["layers"][1]["dense"].get<bool>());
  for (const char* key : {"recall", "random_recall", "mass", "out_rel_err"}) EXPECT_TRUE(j["layers"][1]["heads"][0].contains(key)) << key;
  EXPECT_EQ(j["decode"]["steps"].get<int>(), 7);
  EXPECT_EQ(j["decode"]["mask_refreshes"].get<int>(), 3);  // ceil(7 / 3)
  for (const char* ctx : {"mask", "sa"}) {
    const auto& o = j["offload"][ctx];
    EXPECT_EQ(o["hits"].get<int64_t>() + o["misses"].get<int64_t>(), o["accesses"].get<int64_t>()) << ctx;
    EXPECT_GT(o["accesses"].get<int64_t>(), 0) << ctx;
  }
  for (const char* side : {"dense", "hip"})
    for (const char* phase : {"prefill", "decode_step"}) EXPECT_GT(j["latency_ms"][side][phase]["total"].get<double>(), 0.0);
  std::filesystem::remove(path);
}

TEST(Cli, AnalyzeRejectsImpossibleParametersWithTheRule) {
  CommandResult r = run_hipstudio("analyze --prompt 'Once upon a time' --topk 15 --bk 2 --json /tmp/never.json", true);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("multiple of b_k"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists("/tmp/never.json"));
}

TEST(Cli, MaskCommandWritesMasksForNpyInputs) {
  // Small Q/K/V written as .npy by the test, then the command's outputs are read back.
  const auto dir = std::filesystem::temp_directory_path() / "hipstudio-cli-mask";
  hipstudio::remove_tree(dir.string());
  std::filesystem::create_directories(dir);
  const int64_t H = 2, T = 64, D = 8;
  std::vector<float> q(H * T * D), k(H * T * D), v(H * T * D);
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<float>(std::sin(0.37 * i));
    k[i] = static_cast<float>(std::cos(0.11 * i));
    v[i] = static_cast<float>(std::sin(0.05 * i + 1));
  }
  hipstudio::captures::write_npy((dir / "q.npy").string(), {H, T, D}, q);
  hipstudio::captures::write_npy((dir / "k.npy").string(), {H, T, D}, k);
  hipstudio::captures::write_npy((dir / "v.npy").string(), {H, T, D}, v);
  CommandResult r = run_hipstudio("mask --q " + (dir / "q.npy").string() + " --k " + (dir / "k.npy").string() + " --v " +
                                      (dir / "v.npy").string() + " --topk 8 --bq 4 --bk 2 --out " + (dir / "out").string(),
                                  true);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto mask = hipstudio::captures::read_npy((dir / "out" / "mask.npy").string());
  EXPECT_EQ(mask.shape, (std::vector<int64_t>{H, T / 4, 4}));
  const auto out = hipstudio::captures::read_npy((dir / "out" / "out.npy").string());
  EXPECT_EQ(out.shape, (std::vector<int64_t>{H, T, D}));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "metrics.json"));
  // A Fortran-order or truncated file is refused with status 2.
  std::ofstream(dir / "bad.npy") << "not an npy file";
  CommandResult bad = run_hipstudio("mask --q " + (dir / "bad.npy").string() + " --k " + (dir / "k.npy").string() +
                                        " --out " + (dir / "out2").string(),
                                    true);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("bad.npy"), std::string::npos) << bad.out;
  hipstudio::remove_tree(dir.string());
}

}  // namespace

namespace {

TEST(Cli, GenerateWithHipAttentionStaysOnTheStoryAndSaysWhichBackendRan) {
  CommandResult r = run_hipstudio(
      "generate --prompt 'Once upon a time' --attention hip --topk 16 --bq 8 --bk 2 --ld 1 --rm 4 --max-tokens 24", true);
  EXPECT_EQ(r.status, 0) << r.out;
  // 24 tokens fit the budget of sink + 8 blocks + window: HiP still reproduces dense greedy output here.
  EXPECT_NE(r.out.find("Once upon a time, there was a little girl named Lily."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention: HiP CPU reference"), std::string::npos) << r.out;
}

}  // namespace
