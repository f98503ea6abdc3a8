// The GUI's logic without a window: parameter validation, which worker stages a change
// invalidates, and the worker's views on a synthetic analysis (no model, no LibTorch).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/gui/app_state.h"
#include "app/gui/worker.h"
#include "captures/capture.h"
#include "captures/figures.h"
#include "kernels/mask_reference.h"

namespace hipstudio::gui {
namespace {

// Which stages change key between two requests.
std::vector<int> changed(const Request& a, const Request& b) {
  std::vector<int> out;
  for (int s = 0; s < kStageCount; ++s)
    if (stage_key(s, a) != stage_key(s, b)) out.push_back(s);
  return out;
}

// The stage table describes every stage once: each has its own name (what the status bar and the
// self-test's failures print), and one outside the table has none.
TEST(GuiLogic, EveryStageIsNamedOnceByItsTableRow) {
  std::vector<std::string> names;
  for (int s = 0; s < kStageCount; ++s) {
    const std::string n = stage_name(s);
    EXPECT_NE(n, "?") << "stage " << s << " has no row in the stage table";
    EXPECT_EQ(std::count(names.begin(), names.end(), n), 0) << "two stages are called " << n;
    names.push_back(n);
  }
  EXPECT_EQ(std::string(stage_name(kStageLocality)), "locality");
  EXPECT_EQ(std::string(stage_name(kStageHipRest)), "HiP layers");
  EXPECT_EQ(std::string(stage_name(kStageCount)), "?");
}

TEST(GuiLogic, KnobValidationNamesTheRule) {
  HipKnobs k;
  EXPECT_EQ(validate_knobs(k, 6), "");
  k.b_k = 3;
  EXPECT_NE(validate_knobs(k, 6).find("multiple of b_k"), std::string::npos);
  k = HipKnobs{};
  k.l_d = 7;
  EXPECT_NE(validate_knobs(k, 6).find("l_d"), std::string::npos);
  k = HipKnobs{};
  k.r_m = 0;
  EXPECT_NE(validate_knobs(k, 6).find("r_m"), std::string::npos);
  k = HipKnobs{};
  k.cache_factor = -1;
  EXPECT_NE(validate_knobs(k, 6).find("cache factor"), std::string::npos);
}

TEST(GuiLogic, ChangesInvalidateOnlyTheirStages) {
  AppState s;
  s.applied = s.knobs;
  const Request base = make_request(s);
  auto with = [&](auto edit) {
    AppState t = s;
    edit(t);
    return changed(base, make_request(t));
  };
  // A new head: only the per-head views; the analysis and the layer's masks stay.
  EXPECT_EQ(with([](AppState& t) { ++t.head; }), (std::vector<int>{kStageTrace, kStageDense, kStageLocality}));
  EXPECT_EQ(with([](AppState& t) { ++t.query_block; }), (std::vector<int>{kStageTrace}));
  EXPECT_EQ(with([](AppState& t) { ++t.layer; }),
            (std::vector<int>{kStageMasks, kStageTrace, kStageDense, kStageLocality, kStageLatency, kStageViews,
                              kStageMethodMasks}));
  // The Side by side panel's methods: their masks of the viewed layer, nothing else; a picker
  // switched to a method the small multiples already hold asks for nothing new.
  EXPECT_EQ(with([](AppState& t) { t.compare_right = "quest"; }), (std::vector<int>{kStageMethodMasks}));
  EXPECT_EQ(with([](AppState& t) { t.compare_multiples = {"streaming"}; }), (std::vector<int>{kStageMethodMasks}));
  EXPECT_TRUE(with([](AppState& t) {
                t.compare_multiples = {"hip"};
                t.compare_left = "hip";
              }).empty());
  // The Latency panel's "what if" length re-times, nothing else.
  EXPECT_EQ(with([](AppState& t) { t.latency_tokens = 32768; }), (std::vector<int>{kStageLatency}));
  EXPECT_EQ(with([](AppState& t) { t.applied.cache_factor = 3; }), (std::vector<int>{kStageOffload}));
  EXPECT_EQ(with([](AppState& t) { t.delta = 20; }), (std::vector<int>{kStageLocality}));
  EXPECT_EQ(with([](AppState& t) { ++t.generate_id; }), (std::vector<int>{kStageGenerate}));
  EXPECT_EQ(with([](AppState& t) { ++t.sweep_id; }), (std::vector<int>{kStageSweep}));
  EXPECT_EQ(with([](AppState& t) { t.sweep_values = {8, 16}; }), (std::vector<int>{kStageSweep}));
  EXPECT_EQ(with([](AppState& t) { ++t.methods_id; }), (std::vector<int>{kStageMethods}));
  EXPECT_EQ(with([](AppState& t) { t.methods = {{"streaming", {}}}; }), (std::vector<int>{kStageMethods}));
  // r_m and the decode steps re-run the decode half (and what reads its steps), never a prefill or a
  // layer view; generation uses r_m but not the analysis' step count.
  EXPECT_EQ(with([](AppState& t) { t.applied.r_m = 7; }), (std::vector<int>{kStageDecode, kStageOffload, kStageGenerate, kStageSweep, kStageMethods}));
  EXPECT_EQ(with([](AppState& t) { t.applied.decode_steps = 9; }),
            (std::vector<int>{kStageDecode, kStageOffload, kStageSweep, kStageMethods}));
  // A new k re-runs the paired analysis and everything after it, but not the model load, nor (the
  // viewed layer at or below the first HiP layer, l_d) the views that read only its inputs.
  ASSERT_LE(s.layer, s.applied.l_d);
  std::vector<int> k_change = with([](AppState& t) { t.applied.k = 16; });
  EXPECT_EQ(k_change.front(), kStageAnalysis);
  EXPECT_EQ(k_change.size(), static_cast<size_t>(kStageCount - 3));
  EXPECT_EQ(std::count(k_change.begin(), k_change.end(), kStageDense), 0);
  EXPECT_EQ(std::count(k_change.begin(), k_change.end(), kStageLocality), 0);
  // Above it, the HiP layers below the viewed one change its inputs: everything but the model.
  k_change = with([&](AppState& t) {
    t.layer = s.applied.l_d + 1;
    t.applied.k = 16;
  });
  EXPECT_EQ(k_change.front(), kStageAnalysis);
  EXPECT_EQ(k_change.size(), static_cast<size_t>(kStageCount - 1));
  // Editing the knobs does nothing until they are applied (valid).
  EXPECT_TRUE(with([](AppState& t) { t.knobs.b_k = 3; }).empty());
  EXPECT_EQ(with([](AppState& t) { t.device = "cuda"; }).size(), static_cast<size_t>(kStageCount));
}

TEST(GuiLogic, ViewsOnASyntheticAnalysisMatchTheKernels) {
  Request r;
  r.hip.hip.k = 64;
  r.hip.hip.b_q = 16;
  r.hip.hip.b_k = 2;
  r.hip.hip.sink = 4;
  r.hip.hip.window = 16;
  r.layer = 0;
  r.head = 1;
  r.query_block = 1000;  // clamped to the last block
  auto a = synthetic_analysis(512, r);
  ASSERT_EQ(a->tokens(), 512);
  r = clamp_selection(*a, r);
  EXPECT_EQ(r.query_block, 31);
  auto m = compute_layer_masks(a, r);
  ASSERT_TRUE(m->has_oracle);
  EXPECT_EQ(m->hip.blocks, hip::estimate_masks_reference(a->inputs(0), m->params).mask.blocks);
  auto t = compute_trace(*m, r);
  ASSERT_FALSE(t->steps.empty());
  std::vector<int32_t> starts;
  for (const auto& n : t->steps.back().nodes) starts.push_back(n.first);
  EXPECT_EQ(starts, t->engine_blocks);
  const int32_t* o = m->oracle.row(r.head, r.query_block);
  EXPECT_EQ(t->oracle_blocks, std::vector<int32_t>(o, o + m->oracle.count(r.head, r.query_block)));
  auto d = compute_dense(*a, r);
  EXPECT_EQ(d->probs.rows, 512);
  EXPECT_GT(d->max_prob, 0.0f);
  EXPECT_LE(d->scale_max, d->max_prob);
  auto l = compute_locality(*a, r);
  EXPECT_EQ(l->delta, r.delta);
  EXPECT_GT(l->histogram.pairs, 0);
  EXPECT_FALSE(l->curve.empty());
}

// The GUI's locality and trace views of a layer are the ones a capture of the same analysis stores
// and shows: one rule for both (engine/views/).
TEST(GuiLogic, LocalityAndTraceViewsEqualTheCapturesOfTheSameInputs) {
  Request r;
  r.hip.hip.k = 32;
  r.hip.hip.b_q = 16;
  r.hip.hip.b_k = 2;
  r.hip.hip.sink = 4;
  r.hip.hip.window = 16;
  r.layer = 0;
  r.delta = 13;  // off the sweep: the shown Delta is added to it
  r.bins = 23;
  r.query_block = 17;
  auto a = synthetic_analysis(384, r);
  r = clamp_selection(*a, r);
  captures::CaptureInfo info;
  info.run = {"0.1.0", "synthetic", "llama", "cpu", "prompt"};
  info.dtype = "f32";
  captures::CaptureRequest request;
  request.views = {"iterations", "locality"};
  request.render_images = false;
  request.locality_shown_deltas = {r.delta};
  request.locality_bins = r.bins;
  request.threads = 1;
  auto m = compute_layer_masks(a, r);
  for (int64_t head : {0, 1}) request.traces.push_back({0, head, r.query_block});
  // The synthetic analysis has no model outputs to write; tests/captures checks that a capture's
  // views read back as written.
  const captures::Capture c = captures::build_capture(*a->analysis, info, request, nullptr);
  ASSERT_EQ(c.view_layers, std::vector<int64_t>{0});
  for (int64_t head : {0, 1}) {
    r.head = head;
    const auto gui = compute_locality(*a, r);
    const LocalityView cap = captures::captured_locality_views(c, 0, r.delta).at(static_cast<size_t>(head));
    EXPECT_EQ(cap.rule_note, "");
    EXPECT_EQ(cap.queries, gui->queries);
    EXPECT_EQ(cap.delta, gui->delta);
    EXPECT_EQ(cap.histogram.counts, gui->histogram.counts);
    EXPECT_EQ(cap.histogram.mean, gui->histogram.mean);
    EXPECT_EQ(cap.histogram.stddev, gui->histogram.stddev);
    EXPECT_EQ(cap.fitted, gui->fitted);
    ASSERT_EQ(cap.curve.size(), gui->curve.size());
    for (size_t i = 0; i < cap.curve.size(); ++i) {
      EXPECT_EQ(cap.curve[i].delta, gui->curve[i].delta);
      EXPECT_EQ(cap.curve[i].mean, gui->curve[i].mean);
      EXPECT_EQ(cap.curve[i].stddev, gui->curve[i].stddev);
    }
    const auto t = compute_trace(*m, r);
    const BlockTraceView ct = captures::captured_trace_view(c, c.traces.at(static_cast<size_t>(head)));
    EXPECT_EQ(ct.oracle_scores, t->oracle_scores);
    EXPECT_EQ(ct.oracle_blocks, t->oracle_blocks);
    EXPECT_EQ(ct.trace.blocks, t->trace.blocks);
  }
}

// A layer's views are found wherever they were computed (with the prefill, or deferred and added
// after it), a pending layer has none, and the merged analysis (what a capture writes) holds every
// computed layer's numbers and masks in layer order.
TEST(GuiLogic, DeferredLayerViewsAreFoundAndMerged) {
  auto pa = std::make_shared<PairedAnalysis>();
  for (int64_t l = 0; l < 3; ++l) {
    LayerQuality q;
    q.layer = l;
    q.pending = l != 1;
    if (!q.pending) q.heads.assign(2, HeadQuality{0.5, 0.1, 0.6, 0.2, 0.01, 0.02});
    pa->layers.push_back(q);
    LayerInputs in;
    in.layer = l;
    pa->inputs.push_back(in);
  }
  LayerMaskViews prefill_masks;
  prefill_masks.layer = 1;
  pa->masks.push_back(prefill_masks);
  AnalysisView v;
  v.analysis = pa;
  EXPECT_EQ(v.views_pending(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(v.layer_quality(0), nullptr);
  ASSERT_NE(v.layer_quality(1), nullptr);
  EXPECT_EQ(v.layer_masks(2), nullptr);
  EXPECT_EQ(v.with_deferred_views(), pa) << "nothing deferred yet: the analysis itself";

  auto later = std::make_shared<DeferredLayerViews>();
  later->quality.layer = 2;
  later->quality.heads.assign(2, HeadQuality{0.9, 0.1, 0.95, 0.2, 0.001, 0.02});
  later->masks.layer = 2;
  later->masks.recall = {0.9, 0.8};
  auto set = std::make_shared<DeferredViews>();
  (*set)[2] = later;
  v.deferred = set;
  EXPECT_EQ(v.views_pending(), (std::vector<int64_t>{0}));
  ASSERT_NE(v.layer_quality(2), nullptr);
  EXPECT_EQ(v.layer_quality(2)->heads[0].recall, 0.9);
  ASSERT_NE(v.layer_masks(2), nullptr);
  EXPECT_EQ(v.layer_masks(2)->recall, later->masks.recall);
  const auto merged = v.with_deferred_views();
  ASSERT_NE(merged, pa);
  EXPECT_FALSE(merged->layers[2].pending);
  EXPECT_EQ(merged->layers[2].heads[0].recall, 0.9);
  EXPECT_TRUE(merged->layers[0].pending);
  ASSERT_EQ(merged->masks.size(), 2u);
  EXPECT_EQ(merged->masks[0].layer, 1);
  EXPECT_EQ(merged->masks[1].layer, 2);
  EXPECT_TRUE(pa->layers[2].pending) << "merging changed the analysis it merged from";
}

}  // namespace
}  // namespace hipstudio::gui

// Drag-and-drop: GLFW's drop callback hands each path to handle_dropped_path; what it does with a
// model folder, a checkpoint, a text file and a missing path is checked here without a window.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "app/gui/capture_view.h"
#include "app/gui/files.h"
#include "captures/capture.h"
#include "tests/captures/capture_fixture.h"

namespace hipstudio::gui {
namespace {

TEST(GuiLogic, DroppedPathsOpenModelsAndPrompts) {
  const auto dir = std::filesystem::temp_directory_path() / "hipstudio-gui-drop";
  std::filesystem::create_directories(dir / "hf-model");
  std::ofstream(dir / "story.txt") << "Once upon a time, a cat sat on a mat.";
  std::ofstream(dir / "model.bin") << "x";
  AppState s;
  handle_dropped_path(s, (dir / "story.txt").string());
  EXPECT_EQ(s.prompt, "Once upon a time, a cat sat on a mat.");
  handle_dropped_path(s, (dir / "hf-model").string());
  EXPECT_EQ(s.model_path, (dir / "hf-model").string());
  handle_dropped_path(s, (dir / "model.bin").string());
  EXPECT_EQ(s.model_path, (dir / "model.bin").string());
  handle_dropped_path(s, (dir / "missing.txt").string());
  EXPECT_NE(s.status_message.find("not found"), std::string::npos) << s.status_message;
  EXPECT_EQ(s.prompt, "Once upon a time, a cat sat on a mat.");  // unchanged by the failed drop
  std::filesystem::remove(dir / "story.txt");
  std::filesystem::remove(dir / "model.bin");
  std::filesystem::remove(dir / "hf-model");
  std::filesystem::remove(dir);
}

// A dropped .hipcap opens as a read-only capture: the capture's parameters replace the sliders' in
// the request, Generate is inert, a damaged file leaves the state alone with the reader's error,
// and closing returns to the live request.
TEST(GuiLogic, DroppedCapturesOpenReadOnly) {
  const auto dir = std::filesystem::temp_directory_path() / "hipstudio-gui-drop-capture";
  std::filesystem::create_directories(dir);
  const captures::Capture capture = testing::synthetic_capture(40);  // k 8, 2 layers, 2 heads, 40 tokens
  auto synthetic = std::make_shared<AnalysisView>();
  synthetic->analysis = std::make_shared<PairedAnalysis>(capture.analysis);
  const std::string good = (dir / "run.hipcap").string(), bad = (dir / "bad.hipcap").string();
  captures::write_capture(good, capture);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 2);

  AppState s;
  s.prompt = "live prompt";
  s.knobs.k = 64;
  s.applied = s.knobs;
  const Request live = make_request(s);
  handle_dropped_path(s, bad);
  EXPECT_EQ(s.capture, nullptr);
  EXPECT_NE(s.status_message.find("cannot open capture"), std::string::npos) << s.status_message;
  EXPECT_NE(s.status_message.find("damaged"), std::string::npos) << s.status_message;
  EXPECT_EQ(s.prompt, "live prompt");  // not taken as a prompt file

  handle_dropped_path(s, good);
  ASSERT_NE(s.capture, nullptr) << s.status_message;
  EXPECT_NE(s.capture->banner.find("(read-only)"), std::string::npos);
  EXPECT_EQ(s.capture->knobs.k, 8);
  EXPECT_EQ(s.capture->analysis->tokens(), 40);
  ++s.generate_id;
  const Request shown = make_request(s);
  EXPECT_EQ(shown.hip.hip.k, 8);  // the capture's, not the slider's 64
  EXPECT_EQ(shown.generate_id, 0u);
  EXPECT_EQ(shown.model.capture_view, s.capture->analysis);
  EXPECT_NE(stage_key(kStageModel, shown), stage_key(kStageModel, live));
  // The masks recomputed from the capture's inputs equal the ones from the original analysis.
  const auto from_capture = compute_layer_masks(shown.model.capture_view, clamp_selection(*shown.model.capture_view, shown));
  const auto original = compute_layer_masks(synthetic, clamp_selection(*synthetic, shown));
  EXPECT_EQ(from_capture->hip.blocks, original->hip.blocks);
  EXPECT_EQ(from_capture->hip.counts, original->hip.counts);

  // A damaged file dropped over an open capture leaves it open.
  const auto before = s.capture;
  handle_dropped_path(s, bad);
  EXPECT_EQ(s.capture, before);
  close_capture(s);
  EXPECT_EQ(s.capture, nullptr);
  s.generate_id = 0;
  for (int st = 0; st < kStageCount; ++st) EXPECT_EQ(stage_key(st, make_request(s)), stage_key(st, live));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hipstudio::gui
