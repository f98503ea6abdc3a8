// The self-test's steps for the Sweep and the Layers x heads panels. Sweep: a k sweep of two values
// runs on the worker (the sweep stage) and the row of the sliders' own k equals the live run's
// numbers, recomputed here from its per-head results (the mean over the HiP layers' heads, its KL);
// the plot draws the method's colour (counted in the screenshot's pixels); a Cancel mid-sweep leaves
// the last whole sweep on screen. Grid: a click on a cell (found with the grid's own layout inside
// its child window) makes that layer and head the viewed ones, and the mask view shows them. Save:
// a typed path in a folder tree that does not exist asks first; nothing is created or written.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>  // the grid's child window (the harness reads ImGui's window list)

#include "app/common/sweep_outputs.h"
#include "app/gui/export_preview.h"
#include "app/gui/harness/self_test.h"
#include "app/gui/quality_grid.h"
#include "kernels/methods/selection_method.h"
#include "kernels/oracle.h"

namespace hipstudio::gui {

namespace {

const char* const kMore = kSelfTestMore;

// Mean of a head field over the layers at or above l_d, every layer's views in place.
double mean_over_hip_layers(const PairedAnalysis& a, double HeadQuality::*field) {
  double sum = 0;
  int64_t n = 0;
  for (const LayerQuality& l : a.layers)
    if (!l.dense)
      for (const HeadQuality& h : l.heads) sum += h.*field, ++n;
  return n ? sum / static_cast<double>(n) : NAN;
}

// The grid's child window as last drawn, or null.
ImGuiWindow* grid_child() {
  const std::string id = kGridChild;
  for (ImGuiWindow* w : GImGui->Windows) {
    const std::string name = w->Name;
    const size_t slash = name.rfind('/');
    if (w->Active && slash != std::string::npos && name.compare(slash + 1, id.size(), id) == 0) return w;
  }
  return nullptr;
}

bool popup_open() { return ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel); }

std::string fmt_fail(const char* f, long long a, long long b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

std::string mismatch(const char* what, double sweep, double live) {
  char b[160];
  std::snprintf(b, sizeof b, "the sweep's %s %.12g differs from the live run's %.12g", what, sweep, live);
  return b;
}

}  // namespace

void SelfTest::build_panel_steps() {
  auto shot = [this](const std::string& suffix) {
    if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, suffix);
  };
  // The panel's default: the viewed layer's quality alone (its views the only ones computed), equal
  // to that layer's mean over its heads in the live run, and the context says so.
  auto one_layer = std::make_shared<uint64_t>(0);
  steps_.push_back({"sweep: the viewed layer's quality alone, the live run's numbers of that layer",
                    [one_layer](AppState& s) {
                      s.focus_panel = "sweep";
                      s.sweep_every_layer = false;
                      *one_layer = ask_sweep(s, hip::HipField::kK, {s.applied.k});
                    },
                    [one_layer](const AppState&, const Snapshot& snap) {
                      return snap.sweep && snap.sweep->id == *one_layer && snap.fresh(kStageSweep) && !snap.busy;
                    },
                    [shot](AppState& s, const Snapshot& snap) -> std::string {
                      const SweepResult& r = snap.sweep->result;
                      if (r.views_layer != s.layer) return "the sweep did not measure the viewed layer";
                      if (r.rows.size() != 1) return "the sweep has not one row";
                      const auto live = snap.analysis->with_deferred_views();
                      const LayerQuality& q = live->layers.at(static_cast<size_t>(s.layer));
                      double recall = 0;
                      for (const HeadQuality& h : q.heads) recall += h.recall / static_cast<double>(q.heads.size());
                      if (!(std::abs(r.rows[0].recall - recall) < 1e-9)) return mismatch("layer recall", r.rows[0].recall, recall);
                      if (!(std::abs(r.rows[0].kl - live->kl) < 1e-9)) return mismatch("KL", r.rows[0].kl, live->kl);
                      if (snap.sweep->context.find("layer " + std::to_string(s.layer) + " alone") == std::string::npos)
                        return "the sweep's context does not say which layer it measured";
                      std::printf("self-test:   sweep of layer %d alone: recall %.4f (the live layer's %.4f)\n", s.layer,
                                  r.rows[0].recall, recall);
                      shot("sweep-one-layer");
                      return "";
                    },
                    30, 2});
  auto swept = std::make_shared<uint64_t>(0);  // the sweep id the first step finished
  steps_.push_back({"sweep: k on the worker, the live run's numbers at the sliders' k",
                    [swept](AppState& s) {
                      s.focus_panel = "sweep";
                      const int k = s.applied.k, b_k = s.applied.b_k;
                      const int half = std::max(b_k, k / 2 / b_k * b_k);
                      s.sweep_every_layer = true;  // the means over every HiP layer, which the live run gives too
                      *swept = ask_sweep(s, hip::HipField::kK,
                                         half == k ? std::vector<int64_t>{k, 2 * k} : std::vector<int64_t>{half, k});
                    },
                    [swept](const AppState&, const Snapshot& snap) {
                      return snap.sweep && snap.sweep->id == *swept && snap.fresh(kStageSweep) && snap.fresh(kStageViews) &&
                             snap.fresh(kStageDecode) && !snap.busy;
                    },
                    [shot](AppState& s, const Snapshot& snap) -> std::string {
                      const SweepResult& r = snap.sweep->result;
                      if (r.rows.size() != s.sweep_values.size()) return "the sweep has not one row per value";
                      const SweepRow* own = nullptr;
                      for (size_t i = 0; i < r.rows.size(); ++i) {
                        if (r.rows[i].value != s.sweep_values[i] || r.rows[i].method != "hip") return "a row of another value or method";
                        if (r.rows[i].value == s.applied.k) own = &r.rows[i];
                      }
                      if (!own) return "no row at the sliders' k";
                      const auto live = snap.analysis->with_deferred_views();
                      const double recall = mean_over_hip_layers(*live, &HeadQuality::recall);
                      const double mass = mean_over_hip_layers(*live, &HeadQuality::mass);
                      const double err = mean_over_hip_layers(*live, &HeadQuality::out_rel_err);
                      if (!(std::abs(own->recall - recall) < 1e-9)) return mismatch("recall", own->recall, recall);
                      if (!(std::abs(own->mass - mass) < 1e-9)) return mismatch("mass", own->mass, mass);
                      if (!(std::abs(own->out_rel_err - err) < 1e-6)) return mismatch("output error", own->out_rel_err, err);
                      if (!(std::abs(own->kl - live->kl) < 1e-9)) return mismatch("KL", own->kl, live->kl);
                      if (own->mask_refreshes != live->mask_refreshes) return "the sweep's mask refreshes differ from the live run's";
                      if (r.timed != snap.model->on_cuda) return "latency is reported off CUDA, or missing on it";
                      std::printf("self-test:   sweep k:");
                      for (const SweepRow& row : r.rows) std::printf(" %lld -> recall %.4f KL %.5f", static_cast<long long>(row.value), row.recall, row.kl);
                      std::printf(" (live recall %.4f at k %d)\n", recall, s.applied.k);
                      shot("sweep");
                      return "";
                    },
                    240, 3});
  // The screenshot of the panel holds the method's line colour (its markers are solid discs).
  steps_.push_back({"sweep: the plot draws the line",
                    [](AppState&) {},
                    [](const AppState&, const Snapshot&) { return true; },
                    [this, n = std::make_shared<int>(0)](AppState&, const Snapshot&) -> std::string {
                      if (screenshot_.empty()) return "";
                      if (++*n < 3) return kMore;  // the screenshot is written after its frame
                      const DecodedPng png = decode_png_file(with_suffix(screenshot_, "sweep"));
                      if (!png.error.empty()) return png.error;
                      const uint32_t rgb = app::sweep_method_color(0);
                      const uint32_t c = 0xff000000u | (rgb & 0xff) << 16 | (rgb & 0xff00) | (rgb >> 16 & 0xff);
                      int64_t px = 0;
                      for (uint32_t p : png.rgba) px += (p | 0xff000000u) == c;
                      std::printf("self-test:   sweep plot: %lld pixels of the hip line's colour\n", static_cast<long long>(px));
                      if (px < 60) return "the sweep plot does not show the hip line";
                      return "";
                    },
                    30, 2});
  // Cancel mid-sweep: the sweep stage says so and the last whole sweep stays. (The step's own
  // phases wait: `ready` is asked again while a check asks for more frames.)
  steps_.push_back({"sweep: Cancel stops it and keeps the last whole sweep",
                    [](AppState& s) {
                      const int64_t k = s.applied.k;
                      s.sweep_values = {k, 2 * k, 3 * k, 4 * k};
                      ++s.sweep_id;
                    },
                    [](const AppState&, const Snapshot&) { return true; },
                    [swept, n = std::make_shared<int>(0)](AppState& s, const Snapshot& snap) -> std::string {
                      if (*n == 0) {
                        if (!(snap.busy && snap.running_stage == kStageSweep)) return kMore;  // until the sweep runs
                        ++*n;
                        s.cancel_requested = true;  // what the Cancel button and Esc do
                        return kMore;
                      }
                      if (snap.busy) return kMore;
                      if (snap.error[kStageSweep] != "cancelled") return "the sweep stage does not say cancelled: " + snap.error[kStageSweep];
                      if (!snap.sweep || snap.sweep->id != *swept) return "the cancelled sweep replaced the last whole one";
                      s.sweep_id = 0;  // nothing asked for the next steps
                      s.focus_panel = "mask";
                      return "";
                    },
                    60, 1});

  // The grid: every layer's and head's cell, the viewed one framed; a click opens another.
  auto target = std::make_shared<std::pair<int, int>>(-1, -1);
  auto phase = std::make_shared<int>(0);
  // Methods: HiP, the oracle and StreamingLLM compared on the worker; HiP's row is the live run's,
  // the oracle's recall is 1 wherever it runs.
  auto compared = std::make_shared<uint64_t>(0);
  steps_.push_back({"methods: hip, oracle and streaming on the worker, HiP's row the live run's",
                    [compared](AppState& s) {
                      s.focus_panel = "methods";
                      const hip::HipParams p = to_hip_params(s.applied);
                      s.methods.clear();
                      for (const char* name : {"hip", "oracle", "streaming"})
                        s.methods.push_back({name, hip::methods::resolve_values(hip::methods::find_selection_method(name), {}, p)});
                      *compared = ++s.methods_id;
                    },
                    [compared](const AppState&, const Snapshot& snap) {
                      return snap.methods && snap.methods->id == *compared && snap.fresh(kStageMethods) &&
                             snap.fresh(kStageViews) && snap.fresh(kStageDecode) && !snap.busy;
                    },
                    [shot](AppState&, const Snapshot& snap) -> std::string {
                      const MethodsView& m = *snap.methods;
                      if (m.rows.size() != 3 || m.rows[0].name != "hip" || m.rows[1].name != "oracle" || m.rows[2].name != "streaming")
                        return "the comparison has not one row per method in the order asked";
                      const auto live = snap.analysis->with_deferred_views();
                      const MethodRow& hip = m.rows[0];
                      const double recall = mean_over_hip_layers(*live, &HeadQuality::recall);
                      if (!(std::abs(hip.recall - recall) < 1e-9)) return mismatch("HiP recall", hip.recall, recall);
                      if (!(std::abs(hip.kl - live->kl) < 1e-9)) return mismatch("HiP KL", hip.kl, live->kl);
                      if (!(std::abs(m.dense_ppl - live->dense.ppl) < 1e-9)) return mismatch("dense ppl", m.dense_ppl, live->dense.ppl);
                      if (!(m.rows[1].recall == 1.0)) return mismatch("oracle recall", m.rows[1].recall, 1.0);
                      std::printf("self-test:   methods: hip recall %.4f KL %.5f | oracle recall %.4f KL %.5f | streaming recall %.4f KL %.5f\n",
                                  hip.recall, hip.kl, m.rows[1].recall, m.rows[1].kl, m.rows[2].recall, m.rows[2].kl);
                      shot("methods");
                      return "";
                    },
                    240, 3});
  // Side by side: streaming | quest picked, every method as a small multiple; the masks the panel
  // draws (the method masks stage's, the GUI logic state) are each method's CPU reference on the
  // viewed layer's inputs, with recall against the layer views' oracle.
  steps_.push_back({"side by side: two methods picked, their masks the engine's, all methods as small multiples",
                    [](AppState& s) {
                      s.focus_panel = "compare";
                      s.compare_left = "streaming";
                      s.compare_right = "quest";
                      s.compare_multiples.clear();
                      for (const hip::methods::SelectionMethod* m : hip::methods::selection_methods())
                        s.compare_multiples.push_back(m->name);
                    },
                    [](const AppState&, const Snapshot& snap) {
                      // Every method's entry: a snapshot published before the request reached the worker has fewer.
                      return snap.method_masks && snap.masks && snap.fresh(kStageMethodMasks) && snap.fresh(kStageMasks) &&
                             !snap.busy && snap.method_masks->methods.size() == hip::methods::selection_methods().size();
                    },
                    [shot, n = std::make_shared<int>(0)](AppState& s, const Snapshot& snap) -> std::string {
                      if (!s.focus_panel.empty() || ++*n < 3) return kMore;  // the tab to the front, its pictures drawn
                      const LayerMaskSnapshot& own = *snap.masks;
                      if (snap.method_masks->methods.size() != hip::methods::selection_methods().size())
                        return "not one mask per compared method";
                      const hip::AttentionInputs in = snap.analysis->inputs(own.layer);
                      std::printf("self-test:   side by side, layer %lld:", static_cast<long long>(own.layer));
                      for (const char* name : {"streaming", "quest"}) {
                        const MethodMaskView* v = snap.method_masks->find(name);
                        if (!v || !v->masks) return std::string("no mask of ") + name + (v ? ": " + v->error : "");
                        const auto& method = hip::methods::find_selection_method(name);
                        const hip::MaskResult want =
                            hip::methods::select_masks(method, in, hip::methods::choice_context(v->method, own.params, own.layer));
                        if (v->masks->hip.blocks != want.blocks || v->masks->hip.counts != want.counts)
                          return std::string("the drawn ") + name + " mask is not the method's reference";
                        if (!own.has_oracle || v->masks->recall != hip::mask_recall(want, own.oracle))
                          return std::string("the drawn ") + name + " recall is not against the layer's oracle";
                        double sum = 0;
                        for (double r : v->masks->recall) sum += r;
                        std::printf(" %s recall %.4f (%s, %.1f ms)", name, sum / static_cast<double>(v->masks->recall.size()),
                                    v->source.c_str(), v->seconds * 1e3);
                      }
                      std::printf("\n");
                      shot("side-by-side-methods");
                      return "";
                    },
                    120, 3});
  steps_.push_back({"side by side: back to dense | hip",
                    [](AppState& s) {
                      s.compare_left = kCompareDense;
                      s.compare_right = "hip";
                      s.compare_multiples.clear();
                    },
                    [](const AppState&, const Snapshot& snap) {
                      return snap.fresh(kStageMethodMasks) && !snap.busy && snap.method_masks && snap.method_masks->methods.size() == 1;
                    },
                    [](AppState&, const Snapshot& snap) -> std::string {
                      if (!snap.method_masks || snap.method_masks->methods.size() != 1 || snap.method_masks->methods[0].masks != snap.masks)
                        return "the default pair does not draw HiP's own mask";
                      return "";
                    },
                    60, 2});
  steps_.push_back({"layers x heads: a cell per layer and head, a click opens it",
                    [](AppState& s) {
                      s.focus_panel = "grid";
                      s.layer = 1, s.head = 0;
                    },
                    [phase](const AppState&, const Snapshot& snap) {
                      return *phase > 0 || (snap.analysis && snap.fresh(kStageViews) && snap.fresh(kStageMasks) && !snap.busy);
                    },
                    [this, shot, target, n = phase](AppState& s, const Snapshot& snap) -> std::string {
                      // `ready` is asked every frame: it waits for the views before the first phase
                      // only (the click changes the layer, and the views run again).
                      const AnalysisView& a = *snap.analysis;
                      const int layers = static_cast<int>(a.analysis->layers.size());
                      const int heads = quality_grid_heads(a);
                      switch ((*n)++) {
                        case 0: {
                          if (!s.focus_panel.empty()) return --*n, kMore;  // the tab comes to the front first
                          if (heads != snap.model->n_heads) return "the grid does not hold every head";
                          for (int l = 0; l < layers; ++l)
                            if (!a.layer_quality(l)) return "a layer's cells are missing after every view was computed";
                          ImGuiWindow* w = grid_child();
                          if (!w) return "the grid's child window was not drawn";
                          const QualityGridLayout g =
                              quality_grid_layout(w->DC.CursorStartPos, w->WorkRect.Max.x - w->DC.CursorStartPos.x, layers, heads);
                          *target = {layers - 1, heads - 1};
                          const ImVec2 c = g.cell_center(target->first, target->second);
                          if (c.x > w->InnerClipRect.Max.x || c.y > w->InnerClipRect.Max.y) return "the last cell is outside the grid's window";
                          const ImVec2 d = ImGui::GetIO().DisplaySize;
                          mouse_x = c.x / d.x, mouse_y = c.y / d.y;
                          shot("grid");
                          return kMore;
                        }
                        case 1: return kMore;  // the mouse arrives (hover)
                        case 2: mouse_down = true; return kMore;
                        case 3: mouse_down = false; return kMore;
                        case 4: return kMore;
                        default:
                          mouse_x = 0.01f, mouse_y = 0.99f;
                          if (s.layer != target->first || s.head != target->second)
                            return fmt_fail("a click on the last cell viewed layer %lld head %lld", s.layer, s.head);
                          return "";
                      }
                    },
                    120, 2});
  steps_.push_back({"layers x heads: the clicked head is the one the mask view shows",
                    [](AppState&) {},
                    [target](const AppState&, const Snapshot& snap) {
                      return snap.masks && snap.masks->layer == target->first && snap.fresh(kStageMasks) && snap.trace &&
                             snap.trace->head == target->second && snap.fresh(kStageTrace) && !snap.busy;
                    },
                    [](AppState& s, const Snapshot&) -> std::string {
                      if (s.focus_panel != "" && s.focus_panel != "mask") return "the click did not open the mask view";
                      s.layer = 1, s.head = 0;  // back for the next steps
                      return "";
                    },
                    120, 2});

  // Save never creates a folder tree silently: Enter on a path under missing folders asks (the
  // modal stays, with the question), and until the user agrees nothing exists and no save runs.
  const std::string missing =
      (std::filesystem::temp_directory_path() / ("hipstudio-self-test-ask-" + std::to_string(getpid()))).string();
  steps_.push_back({"File > Save capture: a path under missing folders asks before creating them",
                    [](AppState& s) { s.show_save_capture = true; },
                    [](const AppState& s, const Snapshot& snap) { return !s.file_task && !s.capture && snap.analysis && !snap.busy; },
                    [this, shot, missing, n = std::make_shared<int>(0)](AppState& s, const Snapshot&) -> std::string {
                      const std::string typed = missing + "/deep/run.hipcap";
                      switch ((*n)++) {
                        case 0: return kMore;  // the modal appears, its field focused with the text selected
                        case 1: type_text = typed; return kMore;
                        case 2: return kMore;
                        case 3:
                          if (s.dialogs.save_path != typed) return "typing did not set the path: '" + s.dialogs.save_path + "'";
                          key_down = GLFW_KEY_ENTER;
                          return kMore;
                        case 4: key_down = -1; return kMore;
                        case 5: return kMore;  // the question draws
                        case 6: {
                          std::error_code ec;
                          if (std::filesystem::exists(missing, ec)) return "the save created the missing folders without asking";
                          if (s.file_task) return "a save started before the question was answered";
                          if (!popup_open()) return "the save modal closed instead of asking";
                          shot("save-ask");
                          return kMore;
                        }
                        case 7: return kMore;
                        case 8: key_down = GLFW_KEY_ESCAPE; return kMore;
                        case 9: key_down = -1; return kMore;
                        default: {
                          std::error_code ec;
                          if (popup_open()) return "Escape did not close the save modal";
                          if (std::filesystem::exists(missing, ec) || s.file_task) return "cancelling the question wrote something";
                          return "";
                        }
                      }
                    },
                    60, 3});
}

}  // namespace hipstudio::gui
