// Score locality (paper section 4, figure fig:attn_distribution): for the chosen layer and head,
// the histogram of delta = s_{j+Delta} - s_j at one Delta with its fitted normal and KL, and the
// mean and standard deviation of delta as functions of Delta: the views layer's locality view drawn
// as viz::locality_chart, the chart its exported SVG holds.
#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "captures/layer_kinds.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"
#include "app/gui/chart_draw.h"
#include "viz/locality_chart.h"

namespace hipstudio::gui {

namespace {

class LocalityPanel final : public Panel {
 public:
  const char* id() const override { return "locality"; }
  const char* title() const override { return "Score locality"; }
  PaneSlot default_slot() const override { return PaneSlot::Left; }

  void draw(PanelContext& ctx) override {
    AppState& s = ctx.state;
    const Theme& t = ctx.theme;
    const int tokens = ctx.snap.analysis ? static_cast<int>(ctx.snap.analysis->tokens()) : 256;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
    ImGui::SliderInt("Delta (key distance)", &s.delta, 1, std::max(2, tokens / 2), "%d", ImGuiSliderFlags_Logarithmic);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("bins", &s.bins, 10, 100);
    const auto& lv = ctx.snap.locality;
    if (!lv) {
      empty_state("Computing score locality...", t);
      return;
    }
    const LocalityView& v = *lv;
    StaleScope grey(view_stale(ctx, kStageLocality));
    const hip::DeltaStats& h = v.histogram;
    const std::string kind = ctx.snap.analysis ? captures::layer_kinds(*ctx.snap.analysis->analysis).short_text(v.layer) : std::string("?");
    ImGui::TextWrapped("layer %lld (%s), head %lld, %lld queries from the second half of the prompt, raw scores s = q.k",
                static_cast<long long>(v.layer), kind.c_str(), static_cast<long long>(v.head), static_cast<long long>(v.queries));
    ImGui::Text("Delta = %lld: %lld pairs, mean %.3f, std %.3f, KL(hist || normal) = ",
                static_cast<long long>(v.delta), static_cast<long long>(h.pairs), h.mean, h.stddev);
    ImGui::SameLine(0, 0);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(h.kl_to_normal < 0.1 ? t.good : t.warn), "%.4f", h.kl_to_normal);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("KL divergence of the histogram from its fitted normal; the paper finds almost all < 0.1");

    // The chart the report and export draw (viz/locality_chart.h): histogram and fitted normal, then
    // mean and std against Delta with the chosen Delta marked.
    const float hgt = std::max(ImGui::GetFontSize() * 12, ImGui::GetContentRegionAvail().y - ImGui::GetFontSize() * 3);
    draw_chart("locality", viz::locality_chart({v}, ""), ImVec2(0, hgt), t);
  }
};

}  // namespace

std::unique_ptr<Panel> make_locality_panel() { return std::make_unique<LocalityPanel>(); }

}  // namespace hipstudio::gui
