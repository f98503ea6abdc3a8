// `analyze --methods`: the comparison document (schema hipstudio.methods/1) and the table, one row
// per method, whose numbers are the JSON's; HiP's entry equals a plain `analyze` run's numbers; bad
// method names and parameters are refused (exit 2, `error:` naming the valid ones or the rule)
// before the model loads.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/app/cli_contract.h"

namespace hipstudio::testing {
namespace {

const std::string kHip = " --topk 16 --bq 8 --bk 2 --sink 2 --window 4 --ld 1 --rm 4 --decode 5 -q";
const std::string kPrompt =
    " --prompt 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
    "One day, she saw a big red ball in the park.'";

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

TEST(AnalyzeMethodsCli, WritesOneEntryPerMethodAndHipsEqualsAPlainRun) {
  TempDir tmp;
  const CommandResult r = run_hipstudio("analyze" + kPrompt + kHip + " --methods hip,streaming,quest,vslash --quest-page 4 --json " +
                                        tmp.file("m.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = read_json(tmp.file("m.json"));
  EXPECT_EQ(j["schema"], "hipstudio.methods/1");
  EXPECT_EQ(j["order"], nlohmann::json({"hip", "streaming", "quest", "vslash"}));
  EXPECT_EQ(j["methods"]["quest"]["values"]["quest_page"], 4);
  EXPECT_EQ(j["methods"]["vslash"]["values"]["vslash_vertical_share"], 0.5);
  for (const char* name : {"hip", "streaming", "quest", "vslash"}) {
    const nlohmann::json& m = j["methods"][name];
    EXPECT_EQ(m["decode"]["steps"], 5) << name;
    EXPECT_EQ(m["decode"]["mask_refreshes"], 2) << name;
    EXPECT_EQ(m["layers"].size(), 6u) << name;
    // The table's row holds the JSON's numbers.
    char row[128];
    std::snprintf(row, sizeof row, "%-10s %10.4f %10.5f", name, m["side"]["ppl"].get<double>(), m["kl"].get<double>());
    EXPECT_TRUE(has(r.out, row)) << row << "\n" << r.out;
  }
  EXPECT_TRUE(has(r.out, "dense ")) << r.out;
  // The methods differ from one another on the sparse side.
  EXPECT_NE(j["methods"]["streaming"]["side"]["nll"], j["methods"]["quest"]["side"]["nll"]);

  const CommandResult plain = run_hipstudio("analyze" + kPrompt + kHip + " --json " + tmp.file("a.json"));
  ASSERT_EQ(plain.status, 0) << plain.out;
  const nlohmann::json a = read_json(tmp.file("a.json"));
  EXPECT_EQ(a["schema"], "hipstudio.analysis/1");
  EXPECT_EQ(j["methods"]["hip"]["side"]["nll"], a["hip"]["nll"]);
  // The method's entry is the plain run's layers less the random baseline's fields (the comparison
  // reports each side's own numbers).
  nlohmann::json own = a["layers"];
  for (nlohmann::json& layer : own)
    for (nlohmann::json& head : layer["heads"])
      for (const char* f : {"random_recall", "random_mass", "random_out_rel_err"}) {
        ASSERT_TRUE(head.contains(f));
        head.erase(f);
      }
  EXPECT_EQ(j["methods"]["hip"]["layers"], own);
  EXPECT_EQ(j["dense"]["nll"], a["dense"]["nll"]);
  EXPECT_EQ(j["methods"]["hip"]["kl"], a["kl"]);
}

TEST(AnalyzeMethodsCli, BadMethodsAndParametersAreRefusedBeforeTheModelLoads) {
  TempDir tmp;
  const std::string run = "analyze" + kPrompt + kHip + " --json " + tmp.file("m.json");
  expect_refused_early(run + " --methods hip,h2o", {"h2o", "hip, oracle, random, streaming, quest, vslash"});
  expect_refused_early(run + " --methods hip,hip", {"hip"});
  expect_refused_early(run + " --methods hip --quest-page 4", {"--quest-page", "quest"});
  expect_refused_early(run + " --methods quest --quest-page 3", {"quest_page (3) must be a multiple of b_k (2)"});
  expect_refused_early(run + " --methods quest --sweep k=16,32", {"--sweep", "--methods"});
  EXPECT_FALSE(std::ifstream(tmp.file("m.json")).good());
}

}  // namespace
}  // namespace hipstudio::testing
