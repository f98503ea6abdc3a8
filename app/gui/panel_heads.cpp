// All heads of a layer as small multiples: each head's mask (the mask view's picture, fitted) with
// its recall against the oracle under it (the views layer's number: analysis.layers[l].heads[h]).
// Clicking one opens it in the mask view.
#include <algorithm>
#include <chrono>
#include <cmath>

#include <imgui.h>

#include "captures/layer_kinds.h"
#include "app/gui/mask_canvas.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class HeadsPanel final : public Panel {
 public:
  const char* id() const override { return "heads"; }
  const char* title() const override { return "All heads"; }
  PaneSlot default_slot() const override { return PaneSlot::Right; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    const auto& m = ctx.snap.masks;
    if (!m || !m->source) {
      empty_state(ctx.snap.busy ? "Computing the masks..." : "No masks yet: load a model and a prompt.", t);
      return;
    }
    const AnalysisView& a = *m->source;
    const PairedAnalysis& pa = *a.analysis;
    const int64_t heads = m->hip.heads;
    const captures::LayerKinds kinds = captures::layer_kinds(pa);
    const bool dense_layer = !kinds.hip(m->layer);
    const std::string kind_note = dense_layer ? " (" + kinds.text(m->layer) + ": the masks show what HiP would pick)" : " (HiP)";
    const bool stale = view_stale(ctx, kStageMasks);
    StaleScope grey(stale);
    ImGui::TextWrapped("Layer %lld, all %lld heads%s: recall against the oracle under each; click one to open it in the mask view.",
                       static_cast<long long>(m->layer), static_cast<long long>(heads),
                       kind_note.c_str());
    if (stale) warn_text(stale_reason(ctx, kStageMasks), t);
    if (canvases_.size() != static_cast<size_t>(heads)) canvases_ = std::vector<MaskCanvas>(static_cast<size_t>(heads));
    // Columns: as many ~180 px (scaled) multiples as fit, at least one.
    const float avail = ImGui::GetContentRegionAvail().x;
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    const int cols = std::max(1, std::min(static_cast<int>(heads), static_cast<int>((avail + spacing) / (ImGui::GetFontSize() * 12 + spacing))));
    const float side = (avail - spacing * static_cast<float>(cols - 1)) / static_cast<float>(cols);
    const LayerQuality* lq = a.layer_quality(m->layer);
    // New pictures within a few milliseconds a frame (at least one): a new layer's multiples fill in
    // over a few frames instead of holding up the frame that shows the mask view's new mask.
    const auto frame_start = std::chrono::steady_clock::now();
    bool pictured = false;
    auto picture_time_left = [&] {
      return !pictured || std::chrono::steady_clock::now() - frame_start < std::chrono::milliseconds(4);
    };
    for (int64_t h = 0; h < heads; ++h) {
      if (h % cols != 0) ImGui::SameLine();
      ImGui::BeginGroup();
      ImGui::PushID(static_cast<int>(h));
      MaskViewState fit = s.mask_view;
      fit.span = 0, fit.x0 = fit.y0 = 0;
      MaskCanvas& canvas = canvases_[static_cast<size_t>(h)];
      if (canvas.picture_outdated(m, h) && !picture_time_left()) {
        placeholder(side, t);  // its picture comes in a later frame
        s.redraw_soon = true;
        ImGui::Text("head %lld", static_cast<long long>(h));
        ImGui::PopID();
        ImGui::EndGroup();
        continue;
      }
      pictured = pictured || canvas.picture_outdated(m, h);
      const MaskCanvasEvents ev = canvas.draw("##head", m, a, h, fit, side, false, -1, t);
      if (h == s.head) {
        const ImVec2 r0 = ImGui::GetItemRectMin(), r1 = ImGui::GetItemRectMax();
        ImGui::GetWindowDrawList()->AddRect(ImVec2(r0.x - 1, r0.y - 1), ImVec2(r1.x + 1, r1.y + 1), t.accent, 0, 0, 2.0f);
      }
      if (ev.clicked) {
        s.head = static_cast<int>(h);
        s.focus_panel = "mask";
      }
      if (lq && lq->math.windowed()) {
        ImGui::Text("head %lld", static_cast<long long>(h));
        ImGui::SameLine();
        ImGui::TextDisabled("(window %lld: no HiP run)", static_cast<long long>(lq->math.window));
      } else if (lq && h < static_cast<int64_t>(lq->heads.size()) && m->has_oracle) {
        const HeadQuality& q = lq->heads[static_cast<size_t>(h)];
        ImGui::Text("head %lld: recall %.3f", static_cast<long long>(h), q.recall);
        ImGui::SameLine();
        ImGui::TextDisabled("(random %.2f)", q.random_recall);
      } else {
        ImGui::Text("head %lld", static_cast<long long>(h));
      }
      ImGui::PopID();
      ImGui::EndGroup();
    }
  }

 private:
  // The square a multiple takes, empty but for a note, while its picture waits for a later frame.
  static void placeholder(float side, const Theme& t) {
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::Dummy(ImVec2(side, side));
    ImGui::GetWindowDrawList()->AddRect(p0, ImVec2(p0.x + side, p0.y + side), t.grid);
    ImGui::GetWindowDrawList()->AddText(ImVec2(p0.x + 6, p0.y + 6), ImGui::GetColorU32(ImGuiCol_TextDisabled), "drawing...");
  }
  std::vector<MaskCanvas> canvases_;
};

}  // namespace

std::unique_ptr<Panel> make_heads_panel() { return std::make_unique<HeadsPanel>(); }

}  // namespace hipstudio::gui
