// Compare captures: capture B (capture_view.h CompareCapture) beside what is on screen (A: the open
// capture, or the live run), as Tracy's compare mode sets two traces side by side. Both masks of
// the selected layer and head are drawn with one MaskViewState and one selection, so zoom, pan,
// head, layer and query block move together and the hovered cell is cross-haired on the other
// side; below, the difference table of captures::compare_captures (A, B, B - A per layer).
#include <algorithm>
#include <cmath>
#include <tuple>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/gui/capture_view.h"
#include "app/gui/file_browser.h"
#include "app/gui/files.h"
#include "app/gui/mask_canvas.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"
#include "captures/capture_compare.h"
#include "captures/layer_kinds.h"

namespace hipstudio::gui {

namespace {

// A table cell: `digits` decimals (fixed) or significant digits (general), signed for a
// difference; "-" where a side lacks the number.
enum class Cell { kFixed, kGeneral, kSignedFixed, kSignedGeneral };
std::string cell(double v, Cell c, int digits) {
  if (std::isnan(v)) return "-";
  switch (c) {
    case Cell::kFixed: return fmt("%.*f", digits, v);
    case Cell::kGeneral: return fmt("%.*g", digits, v);
    case Cell::kSignedFixed: return fmt("%+.*f", digits, v);
    case Cell::kSignedGeneral: return fmt("%+.*g", digits, v);
  }
  return "-";
}

class CompareCapturesPanel final : public Panel {
 public:
  const char* id() const override { return "compare_captures"; }
  const char* title() const override { return "Compare captures"; }
  PaneSlot default_slot() const override { return PaneSlot::Left; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    draw_open_row(s, ctx.theme);
    if (!s.compare) {
      empty_state("Two captures side by side: A is what is on screen (File > Open capture, or the live run), "
                  "B is the capture named above. Zoom, pan, layer, head and query block stay linked.",
                  ctx.theme);
      return;
    }
    const std::shared_ptr<const AnalysisView>& a = ctx.snap.analysis;
    const std::shared_ptr<const AnalysisView>& b = s.compare->view->analysis;
    ImGui::TextWrapped("A: %s", s.capture ? s.capture->banner.c_str() : "the live run");
    ImGui::TextWrapped("B: %s", s.compare->view->banner.c_str());
    if (!a) {
      empty_state("A has no result yet.", ctx.theme);
      return;
    }
    if (a != compared_a_ || s.compare != compared_b_) {
      comparison_ = captures::compare_captures(*a->analysis, *b->analysis);
      compared_a_ = a, compared_b_ = s.compare;
    }
    for (const std::string& d : comparison_.differences) ImGui::TextDisabled("differs: %s", d.c_str());
    draw_masks(ctx, *b);
    draw_table();
  }

 private:
  void draw_open_row(AppState& s, const Theme& theme) {
    ImGui::TextUnformatted("Capture B:");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 12));
    const bool enter = ImGui::InputTextWithHint("##compare_path", "path/to/other.hipcap", &path_, ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    if (ImGui::SmallButton("...")) browser_.open(BrowseFor::kOpenFile, "Capture B", path_, {".hipcap"});
    ImGui::SameLine();
    if (ImGui::SmallButton("Open B") || enter) open_b(s);
    if (s.compare) {
      ImGui::SameLine();
      if (ImGui::SmallButton("Close B")) s.compare.reset(), error_.clear();
    }
    if (!error_.empty()) warn_text(error_, theme);
    if (browser_.draw(s.recent_folders, theme)) {
      path_ = browser_.chosen();
      open_b(s);
    }
  }

  void open_b(AppState& s) {
    if (open_compare_file(s, path_)) error_.clear();
    else error_ = s.status_message;
  }

  // A and B of the selected layer and head, side by side, one zoom and one cross-hair.
  void draw_masks(PanelContext& ctx, const AnalysisView& b) {
    AppState& s = ctx.state;
    const auto& masks_a = ctx.snap.masks;
    if (!masks_a) {
      ImGui::TextDisabled("A's masks are being computed...");
      return;
    }
    const int64_t layer = masks_a->layer;
    if (!masks_b_ || masks_b_->layer != layer || masks_b_->source != s.compare->view->analysis)
      masks_b_ = s.compare->masks(layer);
    const float avail = ImGui::GetContentRegionAvail().x;
    const float size = std::max(96.0f, std::min((avail - ImGui::GetStyle().ItemSpacing.x) / 2, ImGui::GetContentRegionAvail().y * 0.6f));
    const int64_t head_a = std::min<int64_t>(s.head, masks_a->hip.heads - 1);
    ImGui::BeginGroup();
    ImGui::Text("A: layer %lld, head %lld", static_cast<long long>(layer), static_cast<long long>(head_a));
    set_dense(canvas_a_, *masks_a, s);
    canvas_a_.set_cursor(hover_b_q_, hover_b_k_);
    const MaskCanvasEvents ea = canvas_a_.draw("##compare_a", masks_a, *masks_a->source, head_a, s.mask_view, size, true, s.query_block, ctx.theme);
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginGroup();
    MaskCanvasEvents eb;
    if (masks_b_) {
      const int64_t head_b = std::min<int64_t>(s.head, masks_b_->hip.heads - 1);
      ImGui::Text("B: layer %lld, head %lld", static_cast<long long>(layer), static_cast<long long>(head_b));
      set_dense(canvas_b_, *masks_b_, s);
      canvas_b_.set_cursor(ea.hovered_query, ea.hovered_key);
      // B's own T: a capture of another prompt has other axes. B draws a copy of the shared view
      // laid out for its T (so the two never refit each other), and a zoom or pan made on B moves A.
      MaskViewState vb = s.mask_view;
      vb.tokens = b.tokens();
      eb = canvas_b_.draw("##compare_b", masks_b_, b, head_b, vb, size, true, s.query_block, ctx.theme);
      if (eb.hovered_query >= 0 && (vb.x0 != s.mask_view.x0 || vb.y0 != s.mask_view.y0 || vb.span != s.mask_view.span))
        s.mask_view.x0 = vb.x0, s.mask_view.y0 = vb.y0, s.mask_view.span = vb.span, s.mask_view.zoomed = vb.zoomed;
    } else {
      ImGui::TextWrapped("B holds no masks of layer %lld (it kept layers %s).", static_cast<long long>(layer), kept_layers(b).c_str());
    }
    ImGui::EndGroup();
    hover_b_q_ = eb.hovered_query, hover_b_k_ = eb.hovered_key;
    for (const MaskCanvasEvents& e : {ea, eb})
      if (e.clicked_query >= 0) s.query_block = static_cast<int>(e.clicked_query / masks_a->params.b_q), s.step = 0;
  }

  static void set_dense(MaskCanvas& canvas, const LayerMaskSnapshot& m, const AppState& s) {
    const bool dense = captures::layer_kinds(*m.source->analysis).at(m.layer) == captures::LayerKind::kDense;
    canvas.set_dense(dense && !s.mask_view.show_hip_on_dense);
  }

  static std::string kept_layers(const AnalysisView& b) {
    std::string t;
    for (const LayerMaskViews& m : b.analysis->masks) t += (t.empty() ? "" : ", ") + std::to_string(m.layer);
    return t;
  }

  // Two tables: the model's numbers (KL is the model output's: the captures hold no per-layer KL),
  // then per layer. Columns fit their headers and scroll sideways, so no header is clipped.
  void draw_table() {
    const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX;
    const float row = ImGui::GetTextLineHeightWithSpacing() + 2;
    if (ImGui::BeginTable("##compare_model", 4, flags, ImVec2(0, row * static_cast<float>(comparison_.model.size() + 1) + 8))) {
      for (const char* name : {"model", "A", "B", "B - A"}) ImGui::TableSetupColumn(name);
      ImGui::TableHeadersRow();
      for (const auto& [name, v] : comparison_.model) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(name.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(cell(v.a, Cell::kGeneral, 5).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(cell(v.b, Cell::kGeneral, 5).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(cell(v.diff(), Cell::kSignedGeneral, 4).c_str());
      }
      ImGui::EndTable();
    }
    const float h = std::max(ImGui::GetFontSize() * 8, ImGui::GetContentRegionAvail().y);
    if (!ImGui::BeginTable("##compare_layers", 13, flags | ImGuiTableFlags_ScrollY, ImVec2(0, h))) return;
    ImGui::TableSetupScrollFreeze(1, 1);
    ImGui::TableSetupColumn("layer");
    for (const char* group : {"recall", "output error", "HiP prefill ms", "mass"})
      for (const char* side : {" A", " B", " B - A"}) ImGui::TableSetupColumn((std::string(group) + side).c_str());
    ImGui::TableHeadersRow();
    ImGuiListClipper clip;
    clip.Begin(static_cast<int>(comparison_.layers.size()));
    while (clip.Step())
      for (int r = clip.DisplayStart; r < clip.DisplayEnd; ++r) {
        const captures::ComparedLayer& l = comparison_.layers[static_cast<size_t>(r)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(l.layer));
        for (const auto& [v, general, digits] : {std::tuple{&l.recall, false, 4}, {&l.out_rel_err, true, 4},
                                                 {&l.hip_prefill_ms, false, 3}, {&l.mass, false, 4}}) {
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(cell(v->a, general ? Cell::kGeneral : Cell::kFixed, digits).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(cell(v->b, general ? Cell::kGeneral : Cell::kFixed, digits).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(cell(v->diff(), general ? Cell::kSignedGeneral : Cell::kSignedFixed, digits).c_str());
        }
      }
    ImGui::EndTable();
  }

  std::string path_, error_;
  FileBrowser browser_;
  MaskCanvas canvas_a_, canvas_b_;
  std::shared_ptr<const LayerMaskSnapshot> masks_b_;
  int64_t hover_b_q_ = -1, hover_b_k_ = -1;  // B's hovered cell, cross-haired on A next frame
  std::shared_ptr<const AnalysisView> compared_a_;
  std::shared_ptr<const CompareCapture> compared_b_;
  captures::CaptureComparison comparison_;
};

}  // namespace

std::unique_ptr<Panel> make_compare_captures_panel() { return std::make_unique<CompareCapturesPanel>(); }

}  // namespace hipstudio::gui
