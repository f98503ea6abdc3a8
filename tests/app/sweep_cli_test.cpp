// `analyze --sweep`: each row of the CSV must equal what a separate `analyze --json` run with that
// value reports (the mean over its HiP layers' heads computed here from that JSON, its KL); the table,
// the CSV, the SVGs and the JSON are written; every bad value is refused with exit 2 before any work.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/app/cli_contract.h"
#include "tests/captures/xml_check.h"

namespace hipstudio::testing {
namespace {

// The HiP options every run here takes; `flag` (when given) with `value` instead of its default here.
std::string hip_options(const std::string& flag = "", int value = 0) {
  const std::vector<std::pair<std::string, int>> base = {{"--topk", 16}, {"--bq", 8}, {"--bk", 2}, {"--sink", 2},
                                                         {"--window", 4}, {"--ld", 1},  {"--rm", 4}};
  std::string out;
  for (const auto& [f, v] : base) out += " " + f + " " + std::to_string(f == flag ? value : v);
  return out + " --decode 4 -q";
}
const std::string kHip = hip_options();

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream c(line);
    for (std::string cell; std::getline(c, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

// The mean of a head field over the layers the JSON marks as HiP's.
double mean_over_hip_layers(const nlohmann::json& j, const char* key) {
  double sum = 0;
  int n = 0;
  for (const auto& layer : j["layers"])
    if (!layer["dense"].get<bool>())
      for (const auto& head : layer["heads"]) sum += head[key].get<double>(), ++n;
  return sum / n;
}

void expect_rows_equal_separate_runs(const std::string& flag, const std::string& name, const std::vector<int>& values) {
  TempDir tmp;
  std::ofstream(tmp.file("prompt.txt")) << "Once upon a time, there was a little girl named Lily. She loved to play "
                                           "outside in the sunshine. One day, she saw a big red ball in the park.";
  const std::string prompt = " --prompt @" + tmp.file("prompt.txt");
  std::string list;
  for (int v : values) list += (list.empty() ? "" : ",") + std::to_string(v);
  const CommandResult sweep = run_hipstudio("analyze" + prompt + kHip + " --sweep " + name + "=" + list +
                                            " --sweep-out " + tmp.file("out") + " --json " + tmp.file("sweep.json"));
  ASSERT_EQ(sweep.status, 0) << sweep.out;
  EXPECT_TRUE(has(sweep.out, "recall")) << "the table on stdout: " << sweep.out;
  const auto rows = csv_rows(read(tmp.file("out/sweep_" + name + ".csv")));
  ASSERT_EQ(rows.size(), values.size() + 1);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"method", name, "recall", "mass", "out_rel_err", "kl", "latency_ms",
                                               "mask_refreshes"}));
  for (const char* metric : {"recall", "mass", "out_rel_err", "kl"}) {
    const std::string svg = read(tmp.file("out/sweep_" + name + "_" + metric + ".svg"));
    EXPECT_EQ(xml_problem(svg), "") << metric;
    EXPECT_TRUE(has(svg, "hip")) << metric << ": the legend names the method";
  }
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out/sweep_" + name + "_latency_ms.svg"))) << "no latency on the CPU";
  const nlohmann::json sweep_json = nlohmann::json::parse(read(tmp.file("sweep.json")));
  EXPECT_EQ(sweep_json["schema"], "hipstudio.sweep/1");
  ASSERT_EQ(sweep_json["rows"].size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(name + " = " + std::to_string(values[i]));
    const std::string one = tmp.file("one" + std::to_string(i) + ".json");
    const CommandResult run = run_hipstudio("analyze" + prompt + hip_options(flag, values[i]) + " --json " + one);
    ASSERT_EQ(run.status, 0) << run.out;
    const nlohmann::json j = nlohmann::json::parse(read(one));
    const std::vector<std::string>& row = rows[i + 1];
    EXPECT_EQ(row[0], "hip");
    EXPECT_EQ(row[1], std::to_string(values[i]));
    EXPECT_NEAR(std::stod(row[2]), mean_over_hip_layers(j, "recall"), 1e-12);
    EXPECT_NEAR(std::stod(row[3]), mean_over_hip_layers(j, "mass"), 1e-12);
    EXPECT_NEAR(std::stod(row[4]), mean_over_hip_layers(j, "out_rel_err"), 1e-9);
    EXPECT_NEAR(std::stod(row[5]), j["kl"].get<double>(), 1e-9);
    EXPECT_EQ(row[6], "") << "no latency on the CPU";
    EXPECT_EQ(row[7], std::to_string(j["decode"]["mask_refreshes"].get<int64_t>()));
    EXPECT_NEAR(sweep_json["rows"][i]["recall"].get<double>(), std::stod(row[2]), 1e-15);
  }
}

TEST(SweepCli, KSweepRowsEqualSeparateRuns) { expect_rows_equal_separate_runs("--topk", "k", {8, 16, 32}); }
TEST(SweepCli, DenseLayerSweepRowsEqualSeparateRuns) { expect_rows_equal_separate_runs("--ld", "l_d", {0, 2}); }
TEST(SweepCli, RefreshSweepRowsEqualSeparateRuns) { expect_rows_equal_separate_runs("--rm", "r_m", {1, 3}); }

TEST(SweepCli, FilesGoBesideTheJsonWithoutSweepOut) {
  TempDir tmp;
  const CommandResult r = run_hipstudio("analyze --prompt 'Once upon a time'" + kHip + " --sweep b_q=4,8 --json " +
                                        tmp.file("s.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(std::filesystem::exists(tmp.file("sweep_b_q.csv")));
  EXPECT_TRUE(std::filesystem::exists(tmp.file("sweep_b_q_recall.svg")));
}

// --sweep-layer L: the JSON, the table and the figures say that the quality columns are layer L's,
// and they are not the mean over every HiP layer the same sweep gives without it.
TEST(SweepCli, OneLayerSweepSaysWhichLayerItMeasured) {
  TempDir tmp;
  std::ofstream(tmp.file("prompt.txt")) << "Once upon a time, there was a little girl named Lily. She loved to play "
                                           "outside in the park with her dog, and every day they ran to the big tree.";
  const std::string run = "analyze --prompt @" + tmp.file("prompt.txt") + kHip + " --sweep k=8,16 ";
  const CommandResult one = run_hipstudio(run + "--sweep-layer 3 --json " + tmp.file("one.json"));
  ASSERT_EQ(one.status, 0) << one.out;
  const CommandResult all = run_hipstudio(run + "--sweep-out " + tmp.file("all") + " --json " + tmp.file("all.json"));
  ASSERT_EQ(all.status, 0) << all.out;
  const nlohmann::json a = nlohmann::json::parse(read(tmp.file("one.json")));
  const nlohmann::json b = nlohmann::json::parse(read(tmp.file("all.json")));
  EXPECT_EQ(a["views_layer"], 3);
  EXPECT_TRUE(b["views_layer"].is_null());
  EXPECT_NE(a["rows"][0]["out_rel_err"].get<double>(), b["rows"][0]["out_rel_err"].get<double>());
  EXPECT_DOUBLE_EQ(a["rows"][0]["kl"].get<double>(), b["rows"][0]["kl"].get<double>()) << "KL is the whole model's";
  EXPECT_NE(one.out.find("layer 3 alone"), std::string::npos) << one.out;
  EXPECT_NE(read(tmp.file("sweep_k_recall.svg")).find("layer 3 alone"), std::string::npos);
  EXPECT_NE(all.out.find("mean over the HiP layers"), std::string::npos) << all.out;
}

TEST(SweepCli, BadValuesAreRefusedBeforeAnyWork) {
  TempDir tmp;
  const std::string run = "analyze --prompt hi" + kHip + " --json " + tmp.file("s.json") + " --sweep ";
  expect_refused_early(run + "k=16,15", {"--sweep k=16,15", "k = '15'", "multiple of b_k"});
  expect_refused_early(run + "b_k=3", {"b_k = '3'", "multiple of b_k (3)"});
  expect_refused_early(run + "l_d=1,6", {"l_d = '6'", "from 0 to 5"});
  expect_refused_early(run + "r_m=0", {"r_m = '0'", "out of range"});
  expect_refused_early(run + "k=2000000000", {"k = '2000000000'", "out of range", "--topk"});
  expect_refused_early(run + "k=abc", {"k = 'abc'"});
  expect_refused_early(run + "k=8,,16", {"an empty value"});
  expect_refused_early(run + "k=", {"an empty value"});
  expect_refused_early(run + "k=8,8", {"given twice"});
  expect_refused_early(run + "k", {"no '='", "k, b_k, b_q, l_d, r_m"});
  expect_refused_early(run + "sink=2", {"'sink' is not a parameter a sweep varies"});
  expect_refused_early("analyze --prompt hi" + kHip + " --json " + tmp.file("s.json") + " --sweep-out " + tmp.file("o"),
                       {"--sweep-out", "give --sweep"});
  expect_refused_early("analyze --prompt hi" + kHip + " --json " + tmp.file("s.json") + " --sweep-layer 2",
                       {"--sweep-layer", "give --sweep"});
  expect_refused_early(run + "k=8 --sweep-layer 6", {"--sweep-layer 6", "outside the model's 6 layers", "0 to 5"});
  std::ofstream(tmp.file("a_file")) << "keep me";
  expect_refused_early(run + "k=8 --sweep-out " + tmp.file("a_file"), {"--sweep-out", "a_file"});
  EXPECT_EQ(read(tmp.file("a_file")), "keep me");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("s.json")));
}

}  // namespace
}  // namespace hipstudio::testing
