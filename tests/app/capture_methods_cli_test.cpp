// `capture --methods`: a capture holding every listed method's side, keyed by name, whose numbers
// are the `analyze --methods` document's for the same prompt and settings; `export --method` and
// `report` read a method's side; bad method names are refused before any work.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "captures/capture.h"
#include "tests/app/cli_contract.h"

namespace hipstudio::testing {
namespace {

const std::string kSettings =
    " --prompt 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.'"
    " --topk 16 --bq 8 --bk 2 --sink 2 --window 4 --ld 1 --rm 4 --decode 4 --methods hip,streaming,quest --quest-page 4";

struct MethodsCapture {
  static constexpr const char* kFile = "methods.hipcap";
  static std::string arguments() { return "capture" + kSettings + " --inputs-layers 1,3 --no-images -q"; }
};
class CaptureMethodsCli : public OneCaptureSuite<MethodsCapture> {};

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

TEST_F(CaptureMethodsCli, HoldsEveryMethodWithTheNumbersOfAnalyzeMethods) {
  TempDir tmp;
  const CommandResult a = run_merged("analyze" + kSettings + " -q --json " + tmp.file("m.json"));
  ASSERT_EQ(a.status, 0) << a.out;
  const nlohmann::json j = read_json(tmp.file("m.json"));
  const captures::Capture c = captures::read_capture(capture_);
  EXPECT_EQ(c.format_version, 3);
  ASSERT_EQ(nlohmann::json(c.method_names()), j["order"]);
  EXPECT_EQ(c.view_layers, (std::vector<int64_t>{1, 3}));
  for (const captures::CapturedMethod& m : c.methods) {
    const nlohmann::json& e = j["methods"][m.choice.name];
    EXPECT_EQ(nlohmann::json(m.choice.values), e["values"]) << m.choice.name;
    EXPECT_EQ(nlohmann::json(m.side.nll), e["side"]["nll"]) << m.choice.name;
    EXPECT_EQ(nlohmann::json(m.side.generated), e["side"]["generated"]) << m.choice.name;
    EXPECT_DOUBLE_EQ(m.kl, e["kl"].get<double>()) << m.choice.name;
    EXPECT_DOUBLE_EQ(m.top1_agreement, e["top1_agreement"].get<double>()) << m.choice.name;
    EXPECT_EQ(m.mask_refreshes, e["decode"]["mask_refreshes"].get<int64_t>()) << m.choice.name;
    for (size_t l = 0; l < m.quality.size(); ++l)
      for (size_t h = 0; h < m.quality[l].size(); ++h)
        for (const auto& [key, value] : {std::pair<const char*, double>{"recall", m.quality[l][h].recall},
                                         {"mass", m.quality[l][h].mass},
                                         {"out_rel_err", m.quality[l][h].out_rel_err}}) {
          const nlohmann::json& want = e["layers"][l]["heads"][h][key];
          if (want.is_number()) {
            EXPECT_DOUBLE_EQ(value, want.get<double>()) << m.choice.name << " L" << l << " H" << h << " " << key;
          }
        }
    // Its masks of the view layers are its own (the mask view measures the method's mask).
    ASSERT_EQ(m.masks.size(), 2u) << m.choice.name;
    EXPECT_EQ(m.masks[1].method, m.choice.name);
  }
  EXPECT_NE(c.find_method("streaming")->masks[1].hip.blocks, c.find_method("hip")->masks[1].hip.blocks);
  // open --print lists every method from the manifest.
  const CommandResult open = run_merged("open --print " + capture_);
  ASSERT_EQ(open.status, 0) << open.out;
  for (const char* name : {"method hip:", "method streaming:", "method quest:"}) EXPECT_TRUE(has(open.out, name)) << open.out;
}

TEST(CaptureMethodsCliRefusals, BadMethodsAreRefusedBeforeTheModelLoads) {
  TempDir tmp;
  const std::string run = "capture" + std::string(" --prompt hi --topk 16 --bq 8 --bk 2 --out ") + tmp.file("c.hipcap");
  expect_refused_early(run + " --methods hip,h2o", {"h2o", "hip, oracle, random, streaming, quest, vslash"});
  expect_refused_early(run + " --methods hip,hip", {"hip"});
  expect_refused_early(run + " --methods hip --quest-page 4", {"--quest-page", "quest"});
  EXPECT_FALSE(std::ifstream(tmp.file("c.hipcap")).good());
}

}  // namespace
}  // namespace hipstudio::testing
