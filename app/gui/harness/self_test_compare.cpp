// The self-test's capture A/B steps: two captures of two runs of the default prompt (k 16 and
// k 32) written with the captures API, A opened as the capture on screen and B beside it in the
// Compare captures panel. Checks: the compared numbers are each run's own (per-layer head means
// computed here from the live snapshots), the panel draws both masks side by side (two separate
// columns of hit-coloured pixels in its pane), and they stay so when the shared zoom and head move.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <unistd.h>

#include <imgui.h>
#include <imgui_internal.h>  // the pane's rectangle (the harness reads ImGui's window list)

#include "app/gui/capture_view.h"
#include "app/gui/export_preview.h"
#include "app/gui/files.h"
#include "app/gui/harness/self_test.h"
#include "captures/capture.h"
#include "captures/capture_compare.h"
#include "viz/mask_image.h"

namespace hipstudio::gui {

namespace {

const char* const kMore = kSelfTestMore;

// The screen rectangle of the child window `id` ("Parent/##id_XXXXXXXX"), or an empty one.
ImRect child_rect(const std::string& id) {
  for (ImGuiWindow* w : GImGui->Windows) {
    const std::string name = w->Name;
    const size_t slash = name.rfind('/');
    if (w->Active && slash != std::string::npos && name.compare(slash + 1, id.size(), id) == 0) return w->Rect();
  }
  return ImRect();
}

// Pixels of `color` inside `r`.
int64_t color_pixels(const DecodedPng& png, uint32_t color, const ImRect& r) {
  int64_t n = 0;
  const int x0 = std::max(0, static_cast<int>(r.Min.x)), x1 = std::min(png.width, static_cast<int>(r.Max.x));
  const int y0 = std::max(0, static_cast<int>(r.Min.y)), y1 = std::min(png.height, static_cast<int>(r.Max.y));
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      n += (png.rgba[static_cast<size_t>(y) * static_cast<size_t>(png.width) + static_cast<size_t>(x)] | 0xff000000u) == (color | 0xff000000u);
  return n;
}

double head_mean_recall(const LayerQuality& q) {
  double s = 0;
  int n = 0;
  for (const HeadQuality& h : q.heads)
    if (std::isfinite(h.recall)) s += h.recall, ++n;
  return n ? s / n : 0;
}

}  // namespace

void SelfTest::build_compare_steps() {
  struct Runs {
    std::string a, b;
    std::shared_ptr<const PairedAnalysis> live_a, live_b;  // with their deferred layers' views
    ImRect pane;
  };
  auto runs = std::make_shared<Runs>();
  const std::string stem = (std::filesystem::temp_directory_path() / ("hipstudio-self-test-ab-" + std::to_string(getpid()))).string();
  runs->a = stem + "-a.hipcap";
  runs->b = stem + "-b.hipcap";
  // What `hipstudio capture` writes after its paired run, pieces included.
  auto write = [](const AppState& s, const Snapshot& snap, const std::string& path) -> std::string {
    captures::CaptureInfo info;
    const ModelInfo& m = snap.analysis->model;
    info.run = {HIPSTUDIO_VERSION, m.display_name, m.architecture, m.device, snap.analysis->prompt};
    info.dtype = s.dtype;
    info.prompt_pieces = snap.analysis->prompt_tokens;
    captures::CaptureRequest request;
    request.views = {"mask"};
    request.render_images = false;
    try {
      captures::write_capture(path, captures::build_capture(*snap.analysis->with_deferred_views(), info, request, nullptr));
    } catch (const std::exception& e) {
      return std::string("writing ") + path + " failed: " + e.what();
    }
    return "";
  };
  auto run_done = [](int k) {
    return [k](const AppState& s, const Snapshot& snap) {
      return !s.capture && snap.analysis && snap.masks && snap.analysis->analysis->options.hip.hip.k == k && snap.fresh(kStageAnalysis) &&
             snap.fresh(kStageMasks) && snap.fresh(kStageViews) && !snap.busy;
    };
  };
  steps_.push_back({"capture A: the run at k 16",
                    [](AppState& s) {
                      s.knobs.k = 16;
                      s.focus_panel = "mask";
                    },
                    run_done(16),
                    [runs, write](AppState& s, const Snapshot& snap) -> std::string {
                      runs->live_a = snap.analysis->with_deferred_views();
                      return write(s, snap, runs->a);
                    },
                    120, 2});
  steps_.push_back({"capture B: the run at k 32, then A and B side by side",
                    [](AppState& s) { s.knobs.k = 32; },
                    run_done(32),
                    [this, runs, write](AppState& s, const Snapshot& snap) -> std::string {
                      runs->live_b = snap.analysis->with_deferred_views();
                      if (std::string e = write(s, snap, runs->b); !e.empty()) return e;
                      if (!open_capture_file(s, runs->a)) return "A does not open: " + s.status_message;
                      if (!open_compare_file(s, runs->b)) return "B does not open beside it: " + s.status_message;
                      // The table's numbers are each run's: per-layer head means of the live results.
                      const captures::CaptureComparison c =
                          captures::compare_captures(*s.capture->analysis->analysis, *s.compare->view->analysis->analysis);
                      const PairedAnalysis& la = *runs->live_a;
                      const PairedAnalysis& lb = *runs->live_b;
                      if (c.layers.size() != la.layers.size()) return "the comparison's layers are not the run's";
                      for (size_t l = 0; l < c.layers.size(); ++l) {
                        const double ra = head_mean_recall(la.layers[l]), rb = head_mean_recall(lb.layers[l]);
                        if (std::abs(c.layers[l].recall.a - ra) > 1e-12 || std::abs(c.layers[l].recall.b - rb) > 1e-12)
                          return "layer " + std::to_string(l) + "'s recall is not the runs' own";
                        if (std::abs(c.layers[l].recall.diff() - (rb - ra)) > 1e-12) return "B - A is not the difference";
                      }
                      if (std::abs(c.model[0].second.a - la.kl) > 1e-15 || std::abs(c.model[0].second.b - lb.kl) > 1e-15)
                        return "the KL row is not the runs' KL";
                      if (std::find(c.differences.begin(), c.differences.end(), "k 16 vs 32") == c.differences.end())
                        return "the comparison does not say that k differs";
                      if (!s.compare->view->has_pieces) return "B holds no token text";
                      const LayerQuality& last = lb.layers.back();
                      std::printf("self-test:   A/B: layer %lld recall %.4f (k 16) vs %.4f (k 32); KL %.5f vs %.5f\n",
                                  static_cast<long long>(last.layer), c.layers.back().recall.a, c.layers.back().recall.b, la.kl, lb.kl);
                      s.focus_panel = "compare_captures";
                      return "";
                    },
                    120, 2});
  steps_.push_back({"the Compare captures panel draws A and B side by side",
                    [](AppState& s) { s.focus_panel = "compare_captures"; },
                    [](const AppState& s, const Snapshot& snap) {
                      return s.capture && snap.analysis == s.capture->analysis && snap.masks && snap.fresh(kStageMasks) && !snap.busy;
                    },
                    [this, runs](AppState&, const Snapshot&) -> std::string {
                      runs->pane = child_rect("##pane_left");
                      if (runs->pane.GetWidth() < 100) return "no left pane";
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "compare-captures");
                      return "";
                    },
                    120, 4});
  steps_.push_back({"zoom and head move both sides together",
                    [](AppState& s) {
                      s.head = 1;
                      const double T = static_cast<double>(s.capture->analysis->tokens());
                      s.mask_view.span = T / 2, s.mask_view.x0 = 0, s.mask_view.y0 = T / 2, s.mask_view.zoomed = true;
                    },
                    [](const AppState& s, const Snapshot& snap) { return snap.masks && !snap.busy && s.compare; },
                    [this](AppState& s, const Snapshot&) -> std::string {
                      const double T = static_cast<double>(s.capture->analysis->tokens());
                      if (!(s.mask_view.span < T)) return "the shared zoom was reset";
                      if (!screenshot_.empty()) pending_screenshot_ = with_suffix(screenshot_, "compare-zoomed");
                      return "";
                    },
                    60, 4});
  steps_.push_back({"the A/B screenshots show two masks; close both captures",
                    [](AppState&) {},
                    [](const AppState&, const Snapshot&) { return true; },
                    [this, runs](AppState& s, const Snapshot&) -> std::string {
                      std::string result;
                      if (!screenshot_.empty()) {
                        const uint32_t hit = s.dark ? viz::dark_mask_palette().hit : viz::light_mask_palette().hit;
                        for (const char* suffix : {"compare-captures", "compare-zoomed"}) {
                          const DecodedPng png = decode_png_file(with_suffix(screenshot_, suffix));
                          if (!png.error.empty()) return png.error;
                          // A's canvas fills the pane's left half, B's the right half.
                          const ImRect& p = runs->pane;
                          const float mid = (p.Min.x + p.Max.x) / 2;
                          const int64_t left = color_pixels(png, hit, ImRect(p.Min, ImVec2(mid, p.Max.y)));
                          const int64_t right = color_pixels(png, hit, ImRect(ImVec2(mid, p.Min.y), p.Max));
                          std::printf("self-test:   %s: hit-coloured pixels, A's half %lld, B's half %lld\n", suffix, static_cast<long long>(left),
                                      static_cast<long long>(right));
                          if ((left < 500 || right < 500) && result.empty()) result = std::string(suffix) + ": A and B are not both drawn";
                        }
                      }
                      s.compare.reset();
                      close_capture(s);
                      s.head = 0;
                      s.mask_view.fit();
                      std::filesystem::remove(runs->a);
                      std::filesystem::remove(runs->b);
                      return result;
                    },
                    30, 2});
}

}  // namespace hipstudio::gui
