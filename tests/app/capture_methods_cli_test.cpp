// `capture --methods`: a capture holding every listed method's side, keyed by name, whose numbers
// are the `analyze --methods` document's for the same prompt and settings; `export --method` and
// `report` read a method's side; bad method names are refused before any work.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "captures/capture.h"
#include "captures/npy.h"
#include "captures/zip_store.h"
#include "tests/app/cli_contract.h"
#include "tests/captures/xml_check.h"

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

TEST_F(CaptureMethodsCli, ExportMethodWritesThatMethodsSide) {
  TempDir tmp;
  const captures::Capture c = captures::read_capture(capture_);
  const captures::CapturedMethod& quest = *c.find_method("quest");
  CommandResult r = run_merged("export " + capture_ + " --what nll --method quest --out " + tmp.file("nll.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  const captures::NpyArray nll = captures::read_npy(tmp.file("nll.npy"));
  const double* v = nll.data<double>();
  ASSERT_EQ(nll.shape, (std::vector<int64_t>{2, static_cast<int64_t>(quest.side.nll.size())}));
  EXPECT_EQ(std::vector<double>(v + nll.shape[1], v + 2 * nll.shape[1]), quest.side.nll);
  EXPECT_NE(quest.side.nll, c.find_method("hip")->side.nll);
  r = run_merged("export " + capture_ + " --what mask --format npy --layer 3 --method streaming --out " + tmp.file("m.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  const captures::NpyArray mask = captures::read_npy(tmp.file("m.npy"));
  const std::vector<int32_t>& blocks = c.find_method("streaming")->masks[1].hip.blocks;
  EXPECT_EQ(std::vector<int32_t>(mask.data<int32_t>(), mask.data<int32_t>() + mask.numel()), blocks);
  r = run_merged("export " + capture_ + " --what mask --format svg --layer 3 --method streaming --out " + tmp.file("m.svg"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(read_bytes(tmp.file("m.svg")), "StreamingLLM mask, layer 3")) << "the figure names the method";
  // The default is the first method, HiP.
  r = run_merged("export " + capture_ + " --what mask --format npy --layer 3 --out " + tmp.file("h.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  const captures::NpyArray hip = captures::read_npy(tmp.file("h.npy"));
  EXPECT_EQ(std::vector<int32_t>(hip.data<int32_t>(), hip.data<int32_t>() + hip.numel()), c.find_method("hip")->masks[1].hip.blocks);
}

// --what array copies the stored entry out byte for byte, without decoding the rest.
TEST_F(CaptureMethodsCli, ExportArrayIsTheStoredEntry) {
  TempDir tmp;
  const std::string file = read_bytes(capture_);
  for (const char* name : {"methods/quest/quality", "masks/L3/streaming/blocks", "inputs/L1/q"}) {
    const CommandResult r = run_merged("export " + capture_ + " --what array --name " + name + " --out " + tmp.file("a.npy"));
    ASSERT_EQ(r.status, 0) << r.out;
    std::string stored;
    for (const captures::ZipEntryView& e : captures::zip_index(file, "x"))
      if (e.name == std::string(name) + ".npy") stored = std::string(e.data);
    EXPECT_FALSE(stored.empty()) << name;
    EXPECT_EQ(read_bytes(tmp.file("a.npy")), stored) << name;
  }
  const CommandResult r = run_merged("export " + capture_ + " --what array --name methods/h2o/quality --out " + tmp.file("b.npy"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "holds no array 'methods/h2o/quality'")) << r.out;
}

TEST_F(CaptureMethodsCli, ExportRefusesAMethodTheCaptureDoesNotHold) {
  TempDir tmp;
  for (const char* method : {"vslash", "h2o"}) {
    const CommandResult r = run_merged("export " + capture_ + " --what nll --method " + method + " --out " + tmp.file("x.csv"));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_TRUE(has(r.out, "error: ") && has(r.out, std::string("holds no method '") + method + "'") &&
                has(r.out, "it holds hip, streaming, quest"))
        << r.out;
    EXPECT_FALSE(std::ifstream(tmp.file("x.csv")).good());
  }
}

TEST_F(CaptureMethodsCli, ReportComparesTheMethods) {
  TempDir tmp;
  const CommandResult r = run_merged("report " + capture_ + " --out " + tmp.file("r.html") + " --png-dir " + tmp.file("png"));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string html = read_bytes(tmp.file("r.html"));
  const captures::Capture c = captures::read_capture(capture_);
  EXPECT_TRUE(has(html, "<h2 id=\"methods\">Methods compared</h2>")) << html.substr(0, 2000);
  for (const captures::CapturedMethod& m : c.methods) {
    char ppl[32];
    std::snprintf(ppl, sizeof ppl, "%.4f", m.side.ppl);
    EXPECT_TRUE(has(html, "<tr><td>" + m.choice.name + "</td>")) << m.choice.name;
    EXPECT_TRUE(has(html, ppl)) << m.choice.name << " " << ppl;
  }
  for (const char* figure : {"methods_recall.svg", "methods_out_err.svg"}) {
    EXPECT_TRUE(has(html, std::string("id=\"fig-") + figure + "\"")) << figure;
    const std::string svg = read_bytes(tmp.file(std::string("png/") + figure));
    EXPECT_EQ(xml_problem(svg), "") << figure;
    for (const char* name : {">hip<", ">streaming<", ">quest<"}) EXPECT_TRUE(has(svg, name)) << figure << " " << name;
  }
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
