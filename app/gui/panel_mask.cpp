// Mask view: the estimated block mask of the chosen layer and head over the whole prompt, with
// oracle / random / sink / window overlays, zoom, pan and hover readouts. Click picks the query
// block that the iteration stepper replays.
#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "captures/layer_kinds.h"
#include "app/gui/mask_canvas.h"
#include "app/gui/panel.h"
#include "app/gui/shortcuts.h"
#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

class MaskPanel final : public Panel {
 public:
  const char* id() const override { return "mask"; }
  const char* title() const override { return "Mask view"; }
  PaneSlot default_slot() const override { return PaneSlot::Left; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const auto& masks = ctx.snap.masks;
    MaskViewState& v = s.mask_view;
    ImGui::Checkbox("Oracle (hit / miss / false pick)", &v.show_oracle);
    ImGui::SameLine();
    wrap_if_needed(checkbox_width("Random baseline"));
    ImGui::Checkbox("Random baseline", &v.show_random);
    ImGui::SameLine();
    wrap_if_needed(checkbox_width("Sink + window"));
    ImGui::Checkbox("Sink + window", &v.show_sink_dense);
    ImGui::SameLine();
    wrap_if_needed(ImGui::CalcTextSize("Fit (F) + -").x + ImGui::GetFontSize() * 3);
    if (ImGui::SmallButton("Fit (F)")) v.fit();
    ImGui::SameLine();
    if (ImGui::SmallButton("+")) v.zoom(0.7);
    ImGui::SameLine();
    if (ImGui::SmallButton("-")) v.zoom(1 / 0.7);

    const Theme& t = ctx.theme;
    const viz::MaskPalette& p = t.mask;
    if (v.show_oracle && (!masks || masks->has_oracle)) {
      legend_item(p.hit, "hit");
      legend_item(p.false_pick, "false pick");
      legend_item(p.miss, "miss");
    } else {
      legend_item(p.selected, "HiP selected");
    }
    if (v.show_random) legend_item(p.random, "random");
    if (v.show_sink_dense) {
      legend_item(p.sink, "sink");
      legend_item(p.dense, "dense tail");
    }
    legend_item(p.empty, "not attended");
    legend_item(p.future, "future");
    const captures::LayerKinds kinds = masks ? captures::layer_kinds(*masks->source->analysis) : captures::LayerKinds{};
    if (masks && kinds.at(masks->layer) == captures::LayerKind::kDense && !v.show_hip_on_dense)
      legend_item(p.dense_layer, "dense layer (every key)");
    ImGui::NewLine();

    if (!masks) {
      empty_state(ctx.snap.busy ? "Computing the masks..." : "No masks yet: load a model and a prompt.", t);
      return;
    }
    const LayerMaskSnapshot& m = *masks;
    const int64_t head = std::min<int64_t>(s.head, m.hip.heads - 1);
    // The head's recall as the views layer computed it (the number analyze and the heads view show).
    const LayerQuality* lq = m.source->layer_quality(m.layer);
    const bool have_quality = lq && head < static_cast<int64_t>(lq->heads.size());
    const HeadQuality q = have_quality ? lq->heads[static_cast<size_t>(head)] : HeadQuality{};
    const bool stale = view_stale(ctx, kStageMasks);
    StaleScope grey(stale);
    // A layer HiP does not replace (captures/layer_kinds.h): one under l_d is drawn dense unless asked
    // what HiP would pick; a window layer keeps its window on both sides, and the picture shows what
    // HiP would pick there.
    const captures::LayerKind kind = kinds.at(m.layer);
    const bool dense_layer = kind == captures::LayerKind::kDense;
    if (kind != captures::LayerKind::kHip) {
      const std::string what = kinds.text(m.layer) + "; " + kinds.dense_layers_text() +
                               (dense_layer ? ": every visible key is attended." : ": HiP does not replace it; the picture shows what HiP would pick.");
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(t.warn));
      ImGui::TextWrapped("Layer %lld runs %s", static_cast<long long>(m.layer), what.c_str());
      ImGui::PopStyleColor();
      if (dense_layer) ImGui::Checkbox("Show what HiP would pick", &v.show_hip_on_dense);
    }
    const std::string quality = !m.has_oracle ? fmt("oracle skipped above %lld tokens (O(T^2))", static_cast<long long>(kOracleMaxTokens))
                                : have_quality ? fmt("recall vs oracle %.3f (random %.3f)", q.recall, q.random_recall)
                                               : std::string();
    // The numbers are the result's own (its k, b_k, Kb), so a stale result never borrows the sliders'.
    const std::string why_stale = stale ? stale_reason(ctx, kStageMasks) : std::string();
    const bool short_reason = why_stale == "(updating)";
    ImGui::TextWrapped("layer %lld (%s), head %lld: T = %lld tokens, %lld query blocks, k = %lld, b_k = %lld, Kb = %lld | %s | masks in %.0f ms%s",
                       static_cast<long long>(m.layer), kinds.short_text(m.layer).c_str(), static_cast<long long>(head),
                       static_cast<long long>(m.source->tokens()),
                       static_cast<long long>(m.hip.query_blocks), static_cast<long long>(m.params.k), static_cast<long long>(m.params.b_k),
                       static_cast<long long>(m.hip.kb), quality.c_str(), m.seconds * 1000, short_reason ? " (updating)" : "");
    if (!why_stale.empty() && !short_reason) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(t.warn));
      ImGui::TextWrapped("%s", why_stale.c_str());
      ImGui::PopStyleColor();
    }
    canvas_.set_dense(dense_layer && !v.show_hip_on_dense);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float size = std::max(64.0f, std::min(avail.x, avail.y));
    const MaskCanvasEvents ev = canvas_.draw("##mask", masks, *m.source, head, v, size, true,
                                             s.query_block, t);
    if (ev.clicked_query >= 0) {
      s.query_block = static_cast<int>(ev.clicked_query / m.params.b_q);
      s.step = 0;
      s.focus_panel = "stepper";
    }
    if (ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows) && !ImGui::GetIO().WantTextInput) {
      if (shortcut_pressed(Action::MaskFit)) v.fit();
      if (shortcut_pressed(Action::MaskZoomIn)) v.zoom(0.7);
      if (shortcut_pressed(Action::MaskZoomOut)) v.zoom(1 / 0.7);
    }
  }

 private:
  MaskCanvas canvas_;
};

}  // namespace

std::unique_ptr<Panel> make_mask_panel() { return std::make_unique<MaskPanel>(); }

}  // namespace hipstudio::gui
