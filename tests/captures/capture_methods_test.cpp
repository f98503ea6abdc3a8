// Format 3 keys every method's side by name: a capture of several methods round-trips every
// method's arrays, its numbers are the ones the `analyze --methods` JSON gives for the same runs,
// capture_of_method swaps a method in, and a stored format-2 capture still opens with what it held.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "captures/analysis_json.h"
#include "captures/capture.h"
#include "captures/method_comparison_report.h"
#include "captures/methods_json.h"
#include "captures/zip_store.h"
#include "engine/analysis/layer_view.h"
#include "engine/formats/errors.h"
#include "kernels/methods/selection_method.h"
#include "tests/captures/capture_fixture.h"

namespace hipstudio::captures {
namespace {
using nlohmann::json;
namespace hm = hip::methods;

// A second method's run of the synthetic prompt: streaming at HiP's budget, its side's numbers
// changed so that nothing of HiP's could pass for it.
MethodRun streaming_run() {
  PairedAnalysis a = hipstudio::testing::synthetic_analysis();
  hm::MethodChoice choice{"streaming", hm::resolve_values(hm::find_selection_method("streaming"), {}, a.options.hip.hip)};
  a.options.hip.method = choice;
  for (double& v : a.hip.nll) v += 0.25;
  a.hip.mean_nll = 1.45;
  a.hip.ppl = 4.25;
  a.hip.generated = {21, 22, 23};
  a.kl = 0.0456;
  a.top1_agreement = 0.75;
  for (LayerQuality& q : a.layers)
    for (HeadQuality& h : q.heads) h = {0.5 + 0.01 * q.layer, 0.25, 0.6, 0.35, 0.125, 0.375};
  return {choice, std::move(a)};
}

std::vector<MethodRun> runs() {
  std::vector<MethodRun> r;
  PairedAnalysis hip = hipstudio::testing::synthetic_analysis();
  r.push_back({hip.options.hip.method, std::move(hip)});
  r.push_back(streaming_run());
  return r;
}

Capture methods_capture() {
  std::vector<MethodRun> r = runs();
  const offload::OffloadConfig oc = hipstudio::testing::synthetic_offload_config(r[0].analysis);
  CaptureInfo info;
  info.run = {"0.1.0", "synthetic", "llama", "cpu (1 threads), f32", "p"};
  info.dtype = "f32";
  info.created = "2026-12-01T00:00:00Z";
  CaptureRequest request;
  request.threads = 1;
  request.render_images = false;
  return build_capture(std::move(r), info, request, &oc);
}

void expect_same_masks(const LayerMaskViews& a, const LayerMaskViews& b, const std::string& what) {
  EXPECT_EQ(a.layer, b.layer) << what;
  EXPECT_EQ(a.method, b.method) << what;
  for (const auto& [x, y] : {std::pair{&a.hip, &b.hip}, {&a.oracle, &b.oracle}, {&a.random, &b.random}}) {
    EXPECT_EQ(x->blocks, y->blocks) << what;
    EXPECT_EQ(x->counts, y->counts) << what;
    EXPECT_EQ(x->dense_from, y->dense_from) << what;
  }
  EXPECT_EQ(a.hip.iterations, b.hip.iterations) << what;
  EXPECT_EQ(a.hip.branches, b.hip.branches) << what;
  EXPECT_EQ(a.recall, b.recall) << what;
  EXPECT_EQ(a.random_recall, b.random_recall) << what;
}

TEST(CaptureMethods, EveryMethodsArraysAreKeyedByItsNameAndRoundTrip) {
  const Capture c = methods_capture();
  const std::string bytes = encode_capture(c);
  std::vector<std::string> names;
  for (const ZipEntry& e : zip_decode(bytes, "x")) names.push_back(e.name);
  for (const char* n : {"methods/hip/quality.npy", "methods/streaming/quality.npy", "methods/streaming/scalars.npy",
                        "methods/streaming/nll.npy", "masks/L1/hip/blocks.npy", "masks/L1/hip/iterations.npy",
                        "masks/L1/streaming/blocks.npy", "masks/L1/streaming/oracle_blocks.npy", "masks/L0/streaming/random_recall.npy"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  // Positional names of format 2 are gone; HiP's search arrays belong to HiP alone.
  for (const char* n : {"analysis/quality.npy", "analysis/scalars.npy", "masks/L1/hip_blocks.npy", "masks/L1/streaming/iterations.npy"})
    EXPECT_EQ(std::find(names.begin(), names.end(), n), names.end()) << n;

  const Capture back = decode_capture(bytes, "x");
  EXPECT_EQ(back.format_version, 3);
  EXPECT_EQ(encode_capture(back), bytes);
  ASSERT_EQ(back.method_names(), (std::vector<std::string>{"hip", "streaming"}));
  for (size_t m = 0; m < c.methods.size(); ++m) {
    const CapturedMethod& w = c.methods[m];
    const CapturedMethod& r = back.methods[m];
    EXPECT_EQ(r.choice.values, w.choice.values);
    EXPECT_EQ(r.side.nll, w.side.nll);
    EXPECT_EQ(r.side.generated, w.side.generated);
    EXPECT_EQ(r.side.ppl, w.side.ppl);
    EXPECT_EQ(r.kl, w.kl);
    EXPECT_EQ(r.top1_agreement, w.top1_agreement);
    ASSERT_EQ(r.quality.size(), w.quality.size());
    for (size_t l = 0; l < w.quality.size(); ++l)
      for (size_t h = 0; h < w.quality[l].size(); ++h) {
        EXPECT_EQ(r.quality[l][h].recall, w.quality[l][h].recall);
        EXPECT_EQ(r.quality[l][h].random_out_rel_err, w.quality[l][h].random_out_rel_err);
      }
    ASSERT_EQ(r.masks.size(), w.masks.size());
    for (size_t i = 0; i < w.masks.size(); ++i) expect_same_masks(r.masks[i], w.masks[i], w.choice.name);
  }
  // The side the views show is the first method's.
  EXPECT_EQ(back.analysis.options.hip.method.name, "hip");
  EXPECT_EQ(back.analysis.hip.nll, c.methods[0].side.nll);
  ASSERT_EQ(back.masks.size(), back.methods[0].masks.size());
  for (size_t i = 0; i < back.masks.size(); ++i) expect_same_masks(back.masks[i], back.methods[0].masks[i], "shown");
}

// The capture's per-method numbers are those of the `analyze --methods` document of the same runs.
TEST(CaptureMethods, NumbersAreTheMethodsJsons) {
  const json j = methods_to_json(runs(), RunInfo{});
  const Capture c = decode_capture(encode_capture(methods_capture()), "x");
  const json manifest = c.manifest;
  ASSERT_EQ(j["order"], json(c.method_names()));
  for (size_t m = 0; m < c.methods.size(); ++m) {
    const CapturedMethod& cm = c.methods[m];
    const json& e = j["methods"][cm.choice.name];
    EXPECT_EQ(json(cm.side.nll), e["side"]["nll"]) << cm.choice.name;
    EXPECT_EQ(cm.side.ppl, e["side"]["ppl"].get<double>()) << cm.choice.name;
    EXPECT_EQ(cm.kl, e["kl"].get<double>()) << cm.choice.name;
    const json& summary = manifest["methods"][m]["summary"];
    for (const char* key : {"recall", "mass", "out_rel_err"}) EXPECT_EQ(summary[key], e["means"][key]) << cm.choice.name << " " << key;
    for (size_t l = 0; l < cm.quality.size(); ++l)
      for (size_t h = 0; h < cm.quality[l].size(); ++h) {
        EXPECT_EQ(cm.quality[l][h].recall, e["layers"][l]["heads"][h]["recall"].get<double>());
        EXPECT_EQ(cm.quality[l][h].out_rel_err, e["layers"][l]["heads"][h]["out_rel_err"].get<double>());
      }
    EXPECT_EQ(json(cm.choice.values), e["values"]) << cm.choice.name;
    // The report's comparison row.
    const MethodRow row = method_rows(c)[m];
    EXPECT_EQ(row.name, cm.choice.name);
    EXPECT_EQ(json(row.recall), e["means"]["recall"]);
    EXPECT_EQ(json(row.out_rel_err), e["means"]["out_rel_err"]);
    EXPECT_EQ(row.kl, e["kl"].get<double>());
    EXPECT_EQ(row.top1_agreement, e["top1_agreement"].get<double>());
    EXPECT_EQ(row.ppl, e["side"]["ppl"].get<double>());
  }
}

// A method's masks are what the views layer's reference gives for that method on its own inputs.
TEST(CaptureMethods, AMethodsMasksAreItsOwnSelection) {
  const Capture c = methods_capture();
  const CapturedMethod* s = c.find_method("streaming");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->masks.size(), c.view_layers.size());
  const hip::HipParams& p = c.analysis.options.hip.hip;
  const PairedAnalysis a = streaming_run().analysis;
  for (size_t i = 0; i < s->masks.size(); ++i) {
    const hip::AttentionInputs in = layer_view(*a.find_inputs(c.view_layers[i]));
    const hip::MaskResult expected = hm::select_masks(hm::find_selection_method("streaming"), in,
                                                      hm::choice_context(s->choice, p, c.view_layers[i], 1));
    EXPECT_EQ(s->masks[i].hip.blocks, expected.blocks) << "layer " << c.view_layers[i];
    EXPECT_EQ(s->masks[i].method, "streaming");
    EXPECT_NE(s->masks[i].hip.blocks, c.masks[i].hip.blocks) << "streaming's mask is not HiP's";
  }
}

TEST(CaptureMethods, CaptureOfMethodShowsThatMethodsSide) {
  const Capture c = methods_capture();
  const Capture s = capture_of_method(c, "streaming");
  EXPECT_EQ(s.analysis.options.hip.method.name, "streaming");
  EXPECT_EQ(s.analysis.hip.ppl, 4.25);
  EXPECT_EQ(s.analysis.kl, 0.0456);
  EXPECT_EQ(s.analysis.layers[1].heads[0].recall, 0.51);
  EXPECT_EQ(s.masks[1].hip.blocks, c.find_method("streaming")->masks[1].hip.blocks);
  EXPECT_EQ(s.method_names(), (std::vector<std::string>{"streaming", "hip"}));
  // Everything else stays the capture's: the dense side, inputs, traces.
  EXPECT_EQ(s.analysis.dense.nll, c.analysis.dense.nll);
  EXPECT_EQ(s.traces.size(), c.traces.size());
  try {
    capture_of_method(c, "quest");
    ADD_FAILURE() << "quest was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no method 'quest'; it holds hip, streaming"), std::string::npos) << e.what();
  }
}

TEST(CaptureMethods, TheManifestsMethodListIsChecked) {
  const std::string bytes = encode_capture(methods_capture());
  auto rejection = [](const std::string& b) -> std::string {
    try {
      decode_capture(b, "bad.hipcap");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  using hipstudio::testing::with_manifest;
  EXPECT_NE(rejection(with_manifest(bytes, [](json& m) { m["methods"][1]["name"] = "nonesuch"; })).find("nonesuch"), std::string::npos);
  EXPECT_NE(rejection(with_manifest(bytes, [](json& m) { m["methods"][1]["values"]["streaming_sink"] = 1; })).find("methods: streaming"),
            std::string::npos);
  EXPECT_NE(rejection(with_manifest(bytes, [](json& m) { m["methods"][1]["summary"]["kl"] = 0.5; })).find("summary"), std::string::npos);
  EXPECT_NE(rejection(with_manifest(bytes, [](json& m) { m["method_columns"]["quality"][0] = "mass"; })).find("method_columns"),
            std::string::npos);
  EXPECT_NE(rejection(with_manifest(bytes, [](json& m) { m["params"]["selection"] = "streaming"; })).find("params.selection"),
            std::string::npos);
}

// A format-2 capture (tests/fixtures/captures/format2_synthetic.hipcap, written by the format-2
// writer from synthetic_capture with no images) opens and shows what it held: HiP's one side.
TEST(CaptureMethods, AFormat2CaptureStillOpens) {
  const Capture old = read_capture(std::string(HIPSTUDIO_SOURCE_DIR) + "/tests/fixtures/captures/format2_synthetic.hipcap");
  const Capture now = hipstudio::testing::synthetic_capture();
  EXPECT_EQ(old.format_version, 2);
  ASSERT_EQ(old.method_names(), std::vector<std::string>{"hip"});
  EXPECT_EQ(old.analysis.hip.nll, now.analysis.hip.nll);
  EXPECT_EQ(old.analysis.hip.ppl, now.analysis.hip.ppl);
  EXPECT_EQ(old.analysis.kl, now.analysis.kl);
  EXPECT_EQ(old.methods[0].kl, now.analysis.kl);
  EXPECT_EQ(old.methods[0].mask_refreshes, now.analysis.mask_refreshes);
  ASSERT_EQ(old.analysis.layers.size(), now.analysis.layers.size());
  for (size_t l = 0; l < now.analysis.layers.size(); ++l)
    for (size_t h = 0; h < now.analysis.layers[l].heads.size(); ++h) {
      EXPECT_EQ(old.analysis.layers[l].heads[h].recall, now.analysis.layers[l].heads[h].recall);
      EXPECT_EQ(old.methods[0].quality[l][h].random_mass, now.analysis.layers[l].heads[h].random_mass);
    }
  ASSERT_EQ(old.masks.size(), now.masks.size());
  for (size_t i = 0; i < now.masks.size(); ++i) {
    expect_same_masks(old.masks[i], now.masks[i], "format 2 masks");
    expect_same_masks(old.methods[0].masks[i], now.masks[i], "format 2 method masks");
  }
  ASSERT_EQ(old.analysis.inputs.size(), now.analysis.inputs.size());
  EXPECT_EQ(old.analysis.inputs[1].host().q, now.analysis.inputs[1].host().q);
  EXPECT_EQ(old.traces.size(), now.traces.size());
  // Written again it is a format-3 capture with the same content.
  const Capture again = decode_capture(encode_capture(old), "again");
  EXPECT_EQ(again.format_version, 3);
  EXPECT_EQ(again.manifest["analysis"], old.manifest["analysis"]);
  for (size_t i = 0; i < now.masks.size(); ++i) expect_same_masks(again.masks[i], now.masks[i], "format 3 again");
}

}  // namespace
}  // namespace hipstudio::captures
