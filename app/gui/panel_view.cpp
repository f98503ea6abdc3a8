// Sidebar, first: which layer, head and query block every view shows ([ / ] heads, PgUp / PgDn
// layers). First in the sidebar so that it never scrolls out of sight.
#include <algorithm>

#include <imgui.h>

#include "captures/layer_kinds.h"
#include "app/gui/capture_view.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class ViewPanel final : public Panel {
 public:
  const char* id() const override { return "view"; }
  const char* title() const override { return "View: layer, head, query block"; }
  PaneSlot default_slot() const override { return PaneSlot::Sidebar; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const ModelInfo* info = ctx.snap.model.get();
    const AnalysisView* a = ctx.snap.analysis.get();
    const int layers = a ? static_cast<int>(a->analysis->layers.size()) : (info ? static_cast<int>(info->n_layers) : 1);
    const int heads = a && !a->analysis->inputs.empty() ? static_cast<int>(a->analysis->inputs[0].heads) : 1;
    const int64_t bq = a ? a->analysis->options.hip.hip.b_q : 1;
    const int qbs = a ? static_cast<int>((a->tokens() + bq - 1) / bq) : 1;
    const float w = ImGui::GetContentRegionAvail().x * 0.62f;
    // Before the first result the ranges are unknown: the sliders wait, showing "-" rather than the
    // unclamped request (a query block of 1 << 20 means "the last one").
    if (!a) ImGui::BeginDisabled();
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("layer", &s.layer, 0, std::max(0, layers - 1), a ? "%d" : "-");
    if (ImGui::IsItemHovered()) side_tooltip("PgUp / PgDn");
    if (a) {
      // The layer's kind beside the picker (captures/layer_kinds.h); the tooltip lists every layer's.
      const captures::LayerKinds kinds = captures::layer_kinds(*a->analysis);
      ImGui::SameLine();
      const std::string kind = kinds.short_text(s.layer);
      if (kinds.hip(s.layer)) ImGui::TextUnformatted(kind.c_str());
      else ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ctx.theme.warn), "%s", kind.c_str());
      if (ImGui::IsItemHovered())
        side_tooltip("Layer %d: %s.\n%s.\n%s", s.layer, kinds.text(s.layer).c_str(), kinds.dense_layers_text().c_str(), kinds.summary().c_str());
    }
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt("head", &s.head, 0, std::max(0, heads - 1), a ? "%d" : "-");
    if (ImGui::IsItemHovered()) side_tooltip("[ and ]");
    ImGui::SetNextItemWidth(w);
    int shown_qb = a ? std::min(s.query_block, std::max(0, qbs - 1)) : 0;
    if (ImGui::SliderInt("query block", &shown_qb, 0, std::max(0, qbs - 1), a ? "%d" : "-")) s.query_block = shown_qb;
    if (ImGui::IsItemHovered()) side_tooltip("Or click a row of the mask view.");
    if (!a) ImGui::EndDisabled();
    if (a) {  // before the first result there is nothing to clamp against
      s.layer = std::clamp(s.layer, 0, std::max(0, layers - 1));
      s.head = std::clamp(s.head, 0, std::max(0, heads - 1));
      s.query_block = std::clamp(s.query_block, 0, std::max(0, qbs - 1));
    }
  }
};

}  // namespace

std::unique_ptr<Panel> make_view_panel() { return std::make_unique<ViewPanel>(); }

}  // namespace hipstudio::gui
