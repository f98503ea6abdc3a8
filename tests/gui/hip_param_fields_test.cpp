// The HiP parameter field table (kernels/hip_param_fields.h) against each consumer: the CLI help,
// the analysis JSON, the capture manifest round trip, the GUI settings round trip, and the sidebar's
// red frame on a rule break. The keys and flags are written out here as the files hold them, so a
// table edit that would rename one in a file (old captures, settings or scripts would break) fails.
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/gui/app_state.h"
#include "app/gui/settings.h"
#include "captures/analysis_json.h"
#include "captures/capture.h"
#include "kernels/hip_param_fields.h"
#include "kernels/hip_param_rules.h"
#include "tests/app/run_hipstudio.h"
#include "tests/captures/capture_fixture.h"

namespace hipstudio {
namespace {

using gui::HipKnobs;
using gui::PersistedSettings;
using hip::HipField;
using nlohmann::json;

const std::vector<HipField>& all_fields() {
  static const std::vector<HipField> all = [] {
    std::vector<HipField> v;
    for (const hip::HipParamField& f : hip::hip_param_fields()) v.push_back(f.field);
    return v;
  }();
  return all;
}

// Distinct values that keep every rule: k 24, b_q 6, b_k 4, b_sq 3, b_sk 2, sink 8, window 12, rho
// 0.25, l_d 1, r_m 5, decode 3.
void set_distinct(AnalysisOptions& o) {
  o.hip.hip.k = 24, o.hip.hip.b_q = 6, o.hip.hip.b_k = 4, o.hip.hip.b_sq = 3, o.hip.hip.b_sk = 2;
  o.hip.hip.sink = 8, o.hip.hip.window = 12, o.hip.hip.rho = 0.25;
  o.hip.dense_layers = 1, o.hip.refresh_every = 5, o.decode_steps = 3;
}

TEST(HipParamFields, TableOrderNamesAndKeysAreTheFilesOwn) {
  ASSERT_EQ(hip::hip_param_fields().size(), static_cast<size_t>(hip::kHipFieldCount));
  for (int i = 0; i < hip::kHipFieldCount; ++i) EXPECT_EQ(static_cast<int>(hip::hip_param_fields()[i].field), i);
  // name | flag | analysis JSON key | manifest key | settings key ("-" where the file has none).
  const std::string want = R"(k | --topk | k | k | k
b_q | --bq | b_q | b_q | b_q
b_k | --bk | b_k | b_k | b_k
b_sq | --bsq | b_sq | b_sq | b_sq
b_sk | --bsk | b_sk | b_sk | b_sk
sink | --sink | sink | sink | sink
window | --window | window | window | window
rho | --repr | repr | rho | rho
l_d | --ld | l_d | l_d | l_d
r_m | --rm | r_m | r_m | r_m
c | --cache-factor | - | - | c
decode steps | --decode | decode | decode_steps | decode_steps
)";
  auto text = [](const char* s) { return std::string(s ? s : "-"); };
  std::string got;
  for (HipField f : all_fields()) {
    const hip::HipParamField& d = hip::hip_param_field(f);
    got += std::string(hip::hip_field_name(f)) + " | " + d.cli_flag + " | " + text(d.json_key) + " | " + text(d.manifest_key) +
           " | " + text(d.settings_key) + "\n";
  }
  EXPECT_EQ(got, want);
}

TEST(HipParamFields, DefaultsAreTheStructs) {
  const hip::HipParams p;
  for (HipField f : hip::kHipSizeFields) EXPECT_EQ(hip::hip_size_value(p, f), hip::hip_param_field(f).default_value) << hip::hip_field_name(f);
  EXPECT_EQ(p.rho, hip::hip_param_field(HipField::kRho).default_value);
  HipKnobs k;
  for (HipField f : all_fields()) {
    if (int* v = gui::knob_count(k, f)) {
      EXPECT_EQ(*v, hip::hip_param_field(f).gui_default) << hip::hip_field_name(f);
    }
    if (float* v = gui::knob_real(k, f)) {
      EXPECT_FLOAT_EQ(*v, static_cast<float>(hip::hip_param_field(f).gui_default));
    }
    EXPECT_TRUE((gui::knob_count(k, f) != nullptr) != (gui::knob_real(k, f) != nullptr)) << "every field is one knob";
  }
}

// `hipstudio analyze --help` lists every field's flag with its help and default.
TEST(HipParamFields, EveryFieldIsInTheCliHelp) {
  const testing::CommandResult r = testing::run_hipstudio("analyze --help");
  ASSERT_EQ(r.status, 0) << r.out;
  for (HipField f : all_fields()) {
    const hip::HipParamField& d = hip::hip_param_field(f);
    const size_t at = r.out.find(std::string(d.cli_flag) + " ");
    ASSERT_NE(at, std::string::npos) << d.cli_flag;
    const size_t eol = r.out.find('\n', at);
    const std::string line = r.out.substr(at, eol - at);
    EXPECT_NE(line.find(d.cli_help), std::string::npos) << line;
  }
  const testing::CommandResult mask = testing::run_hipstudio("mask --help");
  ASSERT_EQ(mask.status, 0);
  for (HipField f : hip::kHipSizeFields) EXPECT_NE(mask.out.find(hip::hip_param_field(f).cli_help), std::string::npos);
}

TEST(HipParamFields, EveryFieldIsInTheAnalysisJson) {
  PairedAnalysis a = testing::synthetic_analysis();
  set_distinct(a.options);
  const json j = captures::analysis_to_json(a, captures::RunInfo{});
  // The bytes as the analysis JSON has always written them (keys sorted, counts as integers).
  EXPECT_EQ(j.at("params").dump(),
            R"({"b_k":4,"b_q":6,"b_sk":2,"b_sq":3,"decode":3,"force_dense_tokens":true,"k":24,"l_d":1,"r_m":5,)"
            R"("random_seed":7,"repr":0.25,"sink":8,"window":12})");
}

// Written with distinct values, the manifest holds each under its key and reads back the same.
TEST(HipParamFields, EveryFieldRoundTripsThroughTheManifest) {
  PairedAnalysis a = testing::synthetic_analysis();
  set_distinct(a.options);
  const AnalysisOptions written = a.options;
  const std::string bytes = captures::encode_capture(testing::capture_of(std::move(a), 40));
  json manifest;
  for (const captures::ZipEntry& e : captures::zip_decode(bytes, "x"))
    if (e.name == "manifest.json") manifest = json::parse(e.data);
  EXPECT_EQ(manifest.at("params").dump(),
            R"({"b_k":4,"b_q":6,"b_sk":2,"b_sq":3,"causal":true,"context_limit":0,"decode_steps":3,)"
            R"("force_dense_tokens":true,"k":24,"l_d":1,"r_m":5,"random_seed":7,"rho":0.25,"selection":"hip",)"
            R"("selection_seed":1,"sink":8,"window":12})");
  const AnalysisOptions read = captures::decode_capture(bytes, "x").analysis.options;
  for (HipField f : hip::kHipSizeFields) EXPECT_EQ(hip::hip_size_value(read.hip.hip, f), hip::hip_size_value(written.hip.hip, f));
  EXPECT_EQ(read.hip.hip.rho, 0.25);
  EXPECT_EQ(read.hip.dense_layers, 1);
  EXPECT_EQ(read.hip.refresh_every, 5);
  EXPECT_EQ(read.decode_steps, 3);
}

// The settings file holds every knob under its key and loads it back; a file from before (the keys
// written out) loads the same.
TEST(HipParamFields, EveryKnobRoundTripsThroughTheSettings) {
  PersistedSettings s;
  HipKnobs& k = s.knobs;
  k.k = 24, k.b_q = 6, k.b_k = 4, k.b_sq = 3, k.b_sk = 2, k.sink = 8, k.window = 12, k.l_d = 1, k.r_m = 5;
  k.rho = 0.25f, k.cache_factor = 3.5f, k.decode_steps = 7;
  std::vector<std::unique_ptr<gui::Panel>> panels;
  const std::string text = gui::settings_text(s, panels, gui::WindowGeometry{});
  const json knobs = json::parse(text).at("knobs");
  EXPECT_EQ(knobs, json::parse(R"({"k": 24, "b_q": 6, "b_k": 4, "b_sq": 3, "b_sk": 2, "sink": 8, "window": 12, "l_d": 1,
                                   "r_m": 5, "rho": 0.25, "c": 3.5, "decode_steps": 7})"));
  const testing::TempDir dir;
  const std::string path = dir.file("settings.json");
  gui::write_settings_text(path, text);
  PersistedSettings back;
  gui::WindowGeometry g;
  gui::load_settings(path, back, panels, g);
  for (HipField f : all_fields()) {
    if (int* v = gui::knob_count(back.knobs, f)) {
      EXPECT_EQ(*v, *gui::knob_count(k, f)) << hip::hip_field_name(f);
    }
    if (float* v = gui::knob_real(back.knobs, f)) {
      EXPECT_EQ(*v, *gui::knob_real(k, f)) << hip::hip_field_name(f);
    }
  }
}

// For every field, knobs that break a rule on it: the verdict names that field (the slider the
// sidebar frames red) and no unrelated one, without reading the message.
TEST(HipParamFields, ARuleBreakOnEachFieldMarksThatSlider) {
  using gui::knob_break;
  struct Case {
    HipField field;
    HipField other;  // the second field of a rule between two, else kNone
    void (*edit)(HipKnobs&);
  };
  const std::vector<Case> cases = {
      {HipField::kK, HipField::kBk, [](HipKnobs& k) { k.k = 33; }},          // k % b_k
      {HipField::kBq, HipField::kBsq, [](HipKnobs& k) { k.b_sq = 3; }},      // b_q % b_sq
      {HipField::kBk, HipField::kNone, [](HipKnobs& k) { k.b_k = 0; }},      // b_k >= 1
      {HipField::kBsq, HipField::kNone, [](HipKnobs& k) { k.b_sq = 0; }},    // b_sq >= 1
      {HipField::kBk, HipField::kBsk, [](HipKnobs& k) { k.b_sk = 4; }},      // b_k % b_sk
      {HipField::kSink, HipField::kBk, [](HipKnobs& k) { k.sink = 3; }},     // sink % b_k
      {HipField::kWindow, HipField::kNone, [](HipKnobs& k) { k.window = -2; }},
      {HipField::kRho, HipField::kNone, [](HipKnobs& k) { k.rho = 1.5f; }},
      {HipField::kDenseLayers, HipField::kNone, [](HipKnobs& k) { k.l_d = 7; }},  // a 6-layer model
      {HipField::kRefreshEvery, HipField::kNone, [](HipKnobs& k) { k.r_m = 0; }},
      {HipField::kCacheFactor, HipField::kNone, [](HipKnobs& k) { k.cache_factor = -1; }},
      {HipField::kDecodeSteps, HipField::kNone, [](HipKnobs& k) { k.decode_steps = -1; }},
  };
  std::set<HipField> covered;
  for (const Case& c : cases) {
    HipKnobs k;
    ASSERT_EQ(knob_break(k, 6).message, "");
    c.edit(k);
    const gui::KnobBreak b = knob_break(k, 6);
    ASSERT_NE(b.message, "") << hip::hip_field_name(c.field);
    EXPECT_EQ(b.field, c.field) << b.message;
    EXPECT_EQ(b.other, c.other) << b.message;
    for (HipField f : all_fields()) EXPECT_EQ(b.names(f), f == c.field || f == c.other) << b.message << " " << hip::hip_field_name(f);
    covered.insert(c.field);
    covered.insert(c.other);
  }
  // b_sk: kept from the table's loop by b_k % b_sk above; it is named as the divisor there. Its own
  // rule (>= 1) follows.
  HipKnobs k;
  k.b_sk = 0;
  EXPECT_EQ(knob_break(k, 6).field, HipField::kBsk);
  covered.insert(HipField::kBsk);
  covered.erase(HipField::kNone);
  EXPECT_EQ(covered.size(), all_fields().size());
}

// The kernel's rule break names its fields directly: the message's names are the fields'.
TEST(HipParamFields, RuleBreakFieldsMatchTheirNames) {
  hip::HipParams p;
  p.k = 500, p.b_k = 3;
  const hip::HipRuleBreak b = hip::first_broken_hip_rule(p);
  EXPECT_EQ(b.field, HipField::kK);
  EXPECT_EQ(b.other_field, HipField::kBk);
  EXPECT_EQ(hip::hip_params_problem(p), "k (500) must be a multiple of b_k (3)");
}

}  // namespace
}  // namespace hipstudio
