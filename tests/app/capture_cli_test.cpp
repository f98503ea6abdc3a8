// `hipstudio capture`, `report` and `open` end to end with the default model.
#include <sys/wait.h>

#include <array>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "tests/app/cli_contract.h"
#include "tests/app/run_hipstudio.h"
#include "viz/figure.h"
#include <nlohmann/json.hpp>

#include "captures/capture.h"
#include "captures/figures.h"
#include "captures/zip_store.h"
#include "engine/formats/errors.h"
#include "tests/captures/xml_check.h"
#include "tests/formats/temp_dir.h"

namespace {
using hipstudio::testing::read_bytes;

using hipstudio::testing::CommandResult;

CommandResult run(const std::string& args) { return hipstudio::testing::run_hipstudio(args, /*merge_stderr=*/true); }

const char* kSmall = "--prompt 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.' "
                     "--topk 16 --bq 8 --bk 2 --ld 1 --rm 4 --decode 6";

struct CaptureCliCapture {
  static constexpr const char* kFile = "run.hipcap";
  static std::string arguments() { return std::string("capture ") + kSmall + " --trace 3:1:2"; }
};
class CaptureCli : public hipstudio::testing::OneCaptureSuite<CaptureCliCapture> {};

TEST_F(CaptureCli, CaptureWritesACompleteCaptureThatReopensIdentically) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  EXPECT_NE(setup_.out.find("dense ppl"), std::string::npos) << setup_.out;
  const std::string bytes = read_bytes(capture_);
  const hipstudio::captures::Capture c = hipstudio::captures::read_capture(capture_);
  EXPECT_EQ(hipstudio::captures::encode_capture(c), bytes);  // every array and parameter survives
  EXPECT_EQ(c.analysis.options.hip.hip.k, 16);
  EXPECT_EQ(c.analysis.options.hip.hip.b_q, 8);
  EXPECT_EQ(c.analysis.options.hip.dense_layers, 1);
  EXPECT_EQ(c.analysis.options.hip.refresh_every, 4);
  EXPECT_EQ(c.analysis.decode.size(), 6u);
  EXPECT_EQ(c.masks.size(), 6u);
  EXPECT_EQ(c.analysis.inputs.size(), 6u);
  ASSERT_FALSE(c.traces.empty());
  EXPECT_EQ(c.traces[0].layer, 3);
  EXPECT_EQ(c.traces[0].trace.head, 1);
  EXPECT_EQ(c.traces[0].trace.query_block, 2);
  EXPECT_EQ(c.locality.size(), 6u);
  EXPECT_TRUE(c.has_offload);
  EXPECT_EQ(c.offload.steps, 6);
  EXPECT_EQ(c.info.model_sha256.size(), 64u);
  EXPECT_EQ(c.info.dtype, "f32");
  EXPECT_NE(c.info.run.prompt.find("little girl named Lily"), std::string::npos);
  EXPECT_GT(c.analysis.dense.ppl, 1.0);
  EXPECT_FALSE(c.images.empty());
}

TEST_F(CaptureCli, ReportEmbedsEveryFigureAndTheMetrics) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  const std::string html = dir_->file("report.html");
  const CommandResult r = run("report " + capture_ + " --out " + html + " --png-dir " + dir_->file("figs") + " --csv-dir " +
                              dir_->file("csv") + " --json " + dir_->file("m.json") + " --chrome-trace " + dir_->file("trace.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string text = read_bytes(html);
  const hipstudio::captures::Capture c = hipstudio::captures::read_capture(capture_);
  const auto figures = hipstudio::captures::capture_figures(c);
  EXPECT_GE(figures.size(), 6u + 6u + 2u);  // masks, locality per layer, histograms, cache, latency
  for (const auto& f : figures) {
    EXPECT_NE(text.find("id=\"fig-" + f.name + "\""), std::string::npos) << f.name;
    const std::string file = read_bytes(dir_->file("figs/" + f.name));
    EXPECT_EQ(file, f.bytes) << f.name;
    if (f.png()) {
      EXPECT_EQ(file.substr(1, 3), "PNG") << f.name;
    } else {
      EXPECT_EQ(hipstudio::testing::xml_problem(file), "") << f.name;
    }
  }
  char ppl[32];
  std::snprintf(ppl, sizeof ppl, "%.4f", c.analysis.hip.ppl);
  EXPECT_NE(text.find(ppl), std::string::npos) << ppl;
  std::snprintf(ppl, sizeof ppl, "%.6f", c.analysis.kl);
  EXPECT_NE(text.find(ppl), std::string::npos) << ppl;
  EXPECT_EQ(text.find("https://"), std::string::npos);
  for (const char* csv : {"layer_head_metrics.csv", "token_nll.csv", "latency.csv", "hit_ratio_per_step.csv", "decode_steps.csv"})
    EXPECT_TRUE(std::filesystem::exists(dir_->file(std::string("csv/") + csv))) << csv;
  const auto json = nlohmann::json::parse(read_bytes(dir_->file("m.json")));
  EXPECT_EQ(json["schema"], "hipstudio.analysis/1");
  EXPECT_EQ(json["params"]["k"], 16);
  const auto trace = nlohmann::json::parse(read_bytes(dir_->file("trace.json")));
  EXPECT_GT(trace["traceEvents"].size(), 50u);
}

TEST_F(CaptureCli, ExportWritesOneView) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  const std::string png = dir_->file("mask.png"), svg = dir_->file("loc.svg"), npy = dir_->file("mask.npy");
  CommandResult r = run("export " + capture_ + " --what mask --layer 2 --head 3 --format png --px 256 --out " + png);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_bytes(png).substr(1, 3), "PNG");
  r = run("export " + capture_ + " --what locality --layer 4 --delta 4 --format svg --out " + svg);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(hipstudio::testing::xml_problem(read_bytes(svg)), "");
  r = run("export " + capture_ + " --what mask --layer 2 --format npy --out " + npy);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_bytes(npy).substr(1, 5), "NUMPY");
  r = run("export " + capture_ + " --what mask --format csv --out " + svg + ".txt");  // a name of no format
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("the choices are"), std::string::npos) << r.out;
}

// --style picks the figure's page: paper (white, whatever the GUI's theme) or the GUI's dark one.
TEST_F(CaptureCli, ExportStyleChoosesThePaperOrTheDarkPage) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  const std::string paper = dir_->file("paper.svg"), dark = dir_->file("dark.svg");
  CommandResult r = run("export " + capture_ + " --what mask --layer 2 --head 3 --format svg --style paper --out " + paper);
  ASSERT_EQ(r.status, 0) << r.out;
  r = run("export " + capture_ + " --what mask --layer 2 --head 3 --format svg --style dark --out " + dark);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string p = read_bytes(paper), d = read_bytes(dark);
  EXPECT_EQ(hipstudio::testing::xml_problem(p), "");
  EXPECT_EQ(hipstudio::testing::xml_problem(d), "");
  const std::string paper_page = hipstudio::viz::css_color(hipstudio::viz::paper_style().background);
  const std::string dark_page = hipstudio::viz::css_color(hipstudio::viz::dark_style().background);
  ASSERT_NE(paper_page, dark_page);
  EXPECT_NE(p.find(paper_page), std::string::npos);
  EXPECT_EQ(p.find(dark_page), std::string::npos);
  EXPECT_NE(d.find(dark_page), std::string::npos);
  r = run("export " + capture_ + " --what mask --format svg --style sepia --out " + dir_->file("x.svg"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--style"), std::string::npos) << r.out;
}

TEST_F(CaptureCli, OpenPrintsTheParameters) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  const CommandResult r = run("open --print " + capture_);  // --print: never a window, even with a display
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("HiP: k 16, b_q 8, b_k 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stories15M"), std::string::npos) << r.out;
}

// The capture holds each token's text from the tokenizer: the pieces spell the prompt.
TEST_F(CaptureCli, CaptureStoresEachTokensText) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  const hipstudio::captures::Capture c = hipstudio::captures::read_capture(capture_);
  ASSERT_EQ(c.info.prompt_pieces.size(), c.analysis.prompt_ids.size());
  std::string joined;
  for (const std::string& p : c.info.prompt_pieces) joined += p;
  for (const char* word : {"Once", "upon", "Lily", "sunshine"}) EXPECT_NE(joined.find(word), std::string::npos) << joined;
  EXPECT_EQ(c.info.decode_dense_pieces.size(), c.analysis.decode.size());
  EXPECT_EQ(c.info.decode_hip_pieces.size(), c.analysis.decode.size());
}

// `open A --compare B --print`: A's and B's numbers per layer and B - A, and what differs.
TEST_F(CaptureCli, OpenComparePrintsTheDifferenceTable) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  const std::string b = dir_->file("b.hipcap");
  const std::string small_k = std::string(kSmall).replace(std::string(kSmall).find("--topk 16"), 9, "--topk 8");
  ASSERT_EQ(run("capture " + small_k + " --views mask,latency --model-hash none --out " + b).status, 0);
  const CommandResult r = run("open " + capture_ + " --compare " + b + " --print");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("differs: k 16 vs 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KL(dense || HiP)"), std::string::npos) << r.out;
  // Layer 3's recall columns: each capture's mean over heads, and their difference.
  const hipstudio::captures::Capture ca = hipstudio::captures::read_capture(capture_), cb = hipstudio::captures::read_capture(b);
  auto mean = [](const hipstudio::captures::Capture& c) {
    double sum = 0;
    for (const auto& h : c.analysis.layers[3].heads) sum += h.recall;
    return sum / static_cast<double>(c.analysis.layers[3].heads.size());
  };
  char row[160];
  std::snprintf(row, sizeof row, "\n3      %12.4f %12.4f %12s", mean(ca), mean(cb), "");
  const std::string prefix(row, std::strlen(row) - 13);
  EXPECT_NE(r.out.find(prefix), std::string::npos) << prefix << "\n" << r.out;
  // A missing B is named as the --compare file.
  const CommandResult missing = run("open " + capture_ + " --compare " + dir_->file("none.hipcap") + " --print");
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_NE(missing.out.find("--compare"), std::string::npos) << missing.out;
}

TEST_F(CaptureCli, DamagedCapturesAreRejectedAndNothingIsOverwritten) {
  ASSERT_EQ(setup_.status, 0) << setup_.out;
  const std::string bytes = read_bytes(capture_);
  const std::string bad = dir_->file("bad.hipcap");
  hipstudio::testing::write_bytes(bad, bytes.substr(0, bytes.size() / 2));
  const std::string html = dir_->file("keep.html");
  hipstudio::testing::write_bytes(html, "earlier report");
  CommandResult r = run("report " + bad + " --out " + html);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("error: " + bad + ": damaged capture"), std::string::npos) << r.out;
  EXPECT_EQ(read_bytes(html), "earlier report");
  r = run("open --print " + bad);
  EXPECT_EQ(r.status, 2) << r.out;

  // A capture that fails (bad parameters) leaves the earlier capture as it was.
  const std::string copy = dir_->file("copy.hipcap");
  hipstudio::testing::write_bytes(copy, bytes);
  r = run(std::string("capture --prompt 'Once upon a time' --topk 15 --bk 2 --out ") + copy);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(read_bytes(copy), bytes);
  r = run(std::string("capture --prompt 'Once upon a time' --views mask,nonsense --out ") + copy);
  EXPECT_NE(r.status, 0) << r.out;
  r = run(std::string("capture --prompt 'Once upon a time' --trace 1:2 --out ") + copy);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("LAYER:HEAD:QUERY_BLOCK"), std::string::npos) << r.out;
  EXPECT_EQ(read_bytes(copy), bytes);
  r = run(std::string("capture --prompt 'Once upon a time' --out /nonexistent-dir/x.hipcap"));
  EXPECT_EQ(r.status, 2) << r.out;
}

TEST(CaptureCliViews, FewerViewsMakeASmallerCapture) {
  hipstudio::testing::TempDir dir;
  const std::string path = dir.file("lat.hipcap");
  const CommandResult r = run(std::string("capture ") + kSmall + " --views latency --model-hash none --out " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  const hipstudio::captures::Capture c = hipstudio::captures::read_capture(path);
  EXPECT_TRUE(c.masks.empty());
  EXPECT_TRUE(c.traces.empty());
  EXPECT_FALSE(c.has_offload);
  EXPECT_EQ(c.info.model_sha256, "");
  EXPECT_EQ(c.info.views, std::vector<std::string>{"latency"});
}

}  // namespace

namespace {

// --inputs-layers: the capture keeps the per-layer views of those layers only (every layer's
// per-head numbers stay); export names the kept layers when asked for another; a layer outside the
// model or a trace on a layer not kept is an input error before the run.
TEST(CaptureCliLayers, InputsLayersKeepsThoseLayersAndSaysSoElsewhere) {
  hipstudio::testing::TempDir dir;
  const std::string path = dir.file("few.hipcap");
  const CommandResult made = run(std::string("capture ") + kSmall + " --inputs-layers 4,1 --out " + path);
  ASSERT_EQ(made.status, 0) << made.out;
  const hipstudio::captures::Capture c = hipstudio::captures::read_capture(path);
  EXPECT_EQ(c.view_layers, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(c.masks.size(), 2u);
  EXPECT_EQ(c.analysis.inputs.size(), 2u);
  EXPECT_EQ(c.analysis.layers.size(), 6u);
  EXPECT_EQ(c.locality.size(), 2u);
  ASSERT_FALSE(c.traces.empty());
  EXPECT_EQ(c.traces[0].layer, 1);  // the default traces: the HiP layers among the kept ones
  EXPECT_EQ(run("open --print " + path).status, 0);
  EXPECT_EQ(run("report " + path + " --out " + dir.file("few.html")).status, 0);
  EXPECT_EQ(run("export " + path + " --what mask --format png --layer 4 --out " + dir.file("m4.png")).status, 0);
  const CommandResult other = run("export " + path + " --what mask --format png --layer 2 --out " + dir.file("m2.png"));
  EXPECT_EQ(other.status, 2) << other.out;
  EXPECT_NE(other.out.find("view layers (1,4)"), std::string::npos) << other.out;

  const CommandResult outside = run(std::string("capture ") + kSmall + " --inputs-layers 9 --out " + dir.file("x.hipcap"));
  EXPECT_EQ(outside.status, 2) << outside.out;
  EXPECT_NE(outside.out.find("error: --inputs-layers names layer 9"), std::string::npos) << outside.out;
  const CommandResult trace = run(std::string("capture ") + kSmall + " --inputs-layers 1 --trace 3:0:0 --out " + dir.file("y.hipcap"));
  EXPECT_EQ(trace.status, 2) << trace.out;
  EXPECT_NE(trace.out.find("add 3 to --inputs-layers"), std::string::npos) << trace.out;
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.hipcap")));
}

}  // namespace
