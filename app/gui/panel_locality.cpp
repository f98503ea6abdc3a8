// Score locality (paper section 4, figure fig:attn_distribution): for the chosen layer and head,
// the histogram of delta = s_{j+Delta} - s_j at one Delta with its fitted normal and KL, and the
// mean and standard deviation of delta as functions of Delta.
#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "captures/layer_kinds.h"
#include "app/gui/panel.h"
#include "app/gui/widgets.h"

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

    const float avail = ImGui::GetContentRegionAvail().x;
    const float hgt = std::max(ImGui::GetFontSize() * 12, ImGui::GetContentRegionAvail().y - ImGui::GetFontSize() * 2);
    const float w1 = avail * 0.42f, w2 = (avail - w1) / 2 - ImGui::GetStyle().ItemSpacing.x;
    // Histogram + fitted normal.
    {
      std::vector<double> edges, counts(h.counts.begin(), h.counts.end()), centers;
      const double bw = (h.hist_hi - h.hist_lo) / std::max<size_t>(1, h.counts.size());
      for (size_t b = 0; b <= h.counts.size(); ++b) edges.push_back(h.hist_lo + bw * static_cast<double>(b));
      for (size_t b = 0; b < h.counts.size(); ++b) centers.push_back(h.hist_lo + bw * (static_cast<double>(b) + 0.5));
      double ymax = 1;
      for (double c : counts) ymax = std::max(ymax, c);
      for (double c : v.fitted) ymax = std::max(ymax, c);
      PlotArea p = begin_plot("##hist", ImVec2(w1, hgt), h.hist_lo, h.hist_hi, 0, ymax * 1.08,
                              fmt("delta at Delta = %lld", static_cast<long long>(v.delta)).c_str(), "key pairs", t);
      plot_bars(p, edges, counts, t.text_dim);
      plot_line(p, centers, v.fitted, t.hip, 2.5f);
      end_plot();
    }
    ImGui::SameLine();
    std::vector<double> ds, means, stds;
    for (const auto& c : v.curve) {
      ds.push_back(static_cast<double>(c.delta));
      means.push_back(c.mean);
      stds.push_back(c.stddev);
    }
    auto range = [](const std::vector<double>& y, double& lo, double& hi) {
      lo = 0, hi = 1e-9;
      for (double x : y) lo = std::min(lo, x), hi = std::max(hi, x);
      const double pad = (hi - lo) * 0.1 + 1e-9;
      lo -= lo < 0 ? pad : 0;
      hi += pad;
    };
    const double x0 = 1, x1 = ds.empty() ? 2 : ds.back();
    double lo, hi;
    range(means, lo, hi);
    lo = std::min(lo, -hi);  // the paper's claim: mean near 0, so show 0 in the middle
    {
      PlotArea p = begin_plot("##mean", ImVec2(w2, hgt), x0, x1, lo, hi, "Delta (log)", "mean of delta", t, true);
      plot_line(p, {x0, x1}, {0.0, 0.0}, t.text_dim, 1.0f);
      plot_line(p, ds, means, t.hip, 2.0f);
      plot_points(p, {static_cast<double>(v.delta)}, {h.mean}, t.accent, 4.0f);
      end_plot();
    }
    ImGui::SameLine();
    range(stds, lo, hi);
    {
      PlotArea p = begin_plot("##std", ImVec2(w2, hgt), x0, x1, 0, hi, "Delta (log)", "std of delta", t, true);
      plot_line(p, ds, stds, t.hip, 2.0f);
      plot_points(p, {static_cast<double>(v.delta)}, {h.stddev}, t.accent, 4.0f);
      end_plot();
    }
    legend_item(t.text_dim, "histogram");
    legend_item(t.hip, "fitted normal / curves");
    legend_item(t.accent, "chosen Delta");
  }
};

}  // namespace

std::unique_ptr<Panel> make_locality_panel() { return std::make_unique<LocalityPanel>(); }

}  // namespace hipstudio::gui
