#include "app/gui/quality_grid.h"

#include <algorithm>
#include <cmath>

#include "app/gui/widgets.h"
#include "captures/layer_kinds.h"
#include "viz/colormap.h"
#include "viz/heat_image.h"

namespace hipstudio::gui {

void quality_metric_picker(QualityMetric& metric) {
  int m = static_cast<int>(metric);
  ImGui::RadioButton("recall", &m, static_cast<int>(QualityMetric::kRecall));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Share of the oracle's top-k blocks HiP found (mean over query blocks)");
  ImGui::SameLine();
  ImGui::RadioButton("mass", &m, static_cast<int>(QualityMetric::kMass));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Share of dense attention probability on HiP's keys");
  ImGui::SameLine();
  ImGui::RadioButton("output error", &m, static_cast<int>(QualityMetric::kError));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("||O_hip - O_dense|| / ||O_dense|| (lower is better)");
  metric = static_cast<QualityMetric>(m);
  ImGui::SameLine();
  ImGui::TextDisabled("click a cell to view it");
}

void quality_grid_notes(const AnalysisView& view, const Theme& t) {
  const PairedAnalysis& pa = *view.analysis;
  size_t computing = 0, not_kept = 0, not_run = 0;
  for (int64_t l : view.views_pending())
    ++(view.has_inputs(l) ? computing : pa.hip_partial() && l > pa.hip_through_layer ? not_run : not_kept);
  if (not_run) {
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.warn), "(%zu HiP layers above the viewed one still running)", not_run);
  }
  if (computing) {
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.warn), "(%zu layers' views still computing)", computing);
  }
  if (not_kept) {
    ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.warn), "(%zu layers not kept at this length: pick one to compute it)", not_kept);
  }
}

QualityGridLayout quality_grid_layout(ImVec2 origin, float avail_w, int layers, int heads) {
  QualityGridLayout g;
  g.origin = origin;
  g.layers = layers;
  g.heads = std::max(1, heads);
  g.cell_h = ImGui::GetTextLineHeight() + 2;
  g.label_w = ImGui::GetFontSize() * 5.5f;
  g.cell_w = std::min(ImGui::GetFontSize() * 4.5f, (avail_w - g.label_w) / static_cast<float>(g.heads));
  return g;
}

int quality_grid_heads(const AnalysisView& view) {
  int heads = 0;
  for (const auto& l : view.analysis->layers)
    if (const LayerQuality* q = view.layer_quality(l.layer)) heads = std::max(heads, static_cast<int>(q->heads.size()));
  return heads;
}

QualityGridClick draw_quality_grid(const AnalysisView& view, QualityMetric metric, int viewed_layer, int viewed_head,
                                   const Theme& t) {
  QualityGridClick click;
  const PairedAnalysis& pa = *view.analysis;
  const int heads = quality_grid_heads(view);
  if (heads <= 0) return click;
  const QualityGridLayout g =
      quality_grid_layout(ImGui::GetCursorScreenPos(), ImGui::GetContentRegionAvail().x, static_cast<int>(pa.layers.size()), heads);
  const float cell_w = g.cell_w, cell_h = g.cell_h, label_w = g.label_w;
  const ImVec2 o = g.origin;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  double emax = 1e-9;
  for (const auto& l : pa.layers)
    if (const LayerQuality* q = view.layer_quality(l.layer))
      for (const auto& h : q->heads) emax = std::max(emax, h.out_rel_err);
  // Column labels that fit their cells: "head h", else the number alone, else every n-th number
  // (32 heads in a narrow panel); cell values are drawn only where they fit (the tooltip has them).
  const bool long_labels = ImGui::CalcTextSize(fmt("head %d", heads - 1).c_str()).x + 4 <= cell_w;
  const float number_w = ImGui::CalcTextSize(fmt("%d", heads - 1).c_str()).x + 6;
  const int label_every = long_labels ? 1 : std::max(1, static_cast<int>(std::ceil(number_w / std::max(1.0f, cell_w))));
  for (int h = 0; h < heads; h += label_every) {
    const std::string lbl = long_labels ? fmt("head %d", h) : fmt("%d", h);
    dl->AddText(ImVec2(o.x + label_w + h * cell_w + 3, o.y), t.text_dim, lbl.c_str());
  }
  const bool values_fit = ImGui::CalcTextSize(metric == QualityMetric::kError ? "0.000" : "0.00").x + 4 <= cell_w;
  const captures::LayerKinds grid_kinds = captures::layer_kinds(pa);
  for (size_t l = 0; l < pa.layers.size(); ++l) {
    const float y = g.cell_min(static_cast<int>(l), 0).y;
    // (w): a window layer, (d): dense under l_d; the tooltip says which in full.
    const captures::LayerKind kind = grid_kinds.at(static_cast<int64_t>(l));
    const std::string lbl = fmt("layer %zu%s", l, kind == captures::LayerKind::kWindow ? " (w)" : kind == captures::LayerKind::kHip ? "" : " (d)");
    const std::string kind_text = grid_kinds.text(static_cast<int64_t>(l));
    dl->AddText(ImVec2(o.x, y + 1), t.text_dim, lbl.c_str());
    const LayerQuality* lq = view.layer_quality(static_cast<int64_t>(l));
    for (int h = 0; h < heads; ++h) {
      const ImVec2 a = g.cell_min(static_cast<int>(l), h), b(a.x + cell_w - 2, y + cell_h - 2);
      const bool hovered = ImGui::IsMouseHoveringRect(a, b) && ImGui::IsWindowHovered();
      if (hovered && ImGui::IsMouseClicked(0)) click.layer = static_cast<int>(l), click.head = h;
      if (!lq || h >= static_cast<int>(lq->heads.size())) {
        // Still computing, or (a long prompt) its inputs were not kept: picking it runs its prefill.
        dl->AddRect(a, b, t.text_dim);
        if (hovered)
          ImGui::SetTooltip("layer %zu (%s) head %d: %s", l, kind_text.c_str(), h,
                            view.has_inputs(static_cast<int64_t>(l))
                                ? "its views are still being computed"
                                : "its inputs were not kept (not enough GPU memory for every layer's): click to run the HiP prefill keeping it");
        continue;
      }
      if (lq->math.windowed()) {
        // A sliding-window layer keeps its window on both sides: there is no HiP run to score.
        dl->AddRectFilled(a, b, t.mask.future);
        if (values_fit) dl->AddText(ImVec2(a.x + 3, a.y + 1), t.text_dim, "win");
        if (static_cast<int>(l) == viewed_layer && h == viewed_head) dl->AddRect(a, b, t.accent, 0, 0, 2.0f);
        if (hovered)
          ImGui::SetTooltip("layer %zu (%s) head %d: HiP does not replace a sliding-window layer, so it has no recall, mass or error",
                            l, kind_text.c_str(), h);
        continue;
      }
      const HeadQuality& q = lq->heads[static_cast<size_t>(h)];
      const double v = metric == QualityMetric::kRecall ? q.recall : metric == QualityMetric::kMass ? q.mass : q.out_rel_err;
      // Recall and mass: higher is better (viridis bright); error: lower is better (inverted).
      const double tcol = metric == QualityMetric::kError ? 1.0 - v / emax : v;
      const viz::Rgb c = viz::colormap(viz::ColorMapKind::Viridis, tcol);
      dl->AddRectFilled(a, b, viz::pack_rgba(c));
      if (values_fit) {
        const std::string txt = fmt(metric == QualityMetric::kError ? "%.3f" : "%.2f", v);
        const float lum = 0.3f * c.r + 0.6f * c.g + 0.1f * c.b;
        dl->AddText(ImVec2(a.x + 3, a.y + 1), lum > 0.5f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255), txt.c_str());
      }
      if (static_cast<int>(l) == viewed_layer && h == viewed_head) dl->AddRect(a, b, t.accent, 0, 0, 2.0f);
      if (hovered)
        ImGui::SetTooltip("layer %zu (%s) head %d\nrecall %.3f (random %.3f)\nmass %.3f (random %.3f)\noutput error %.4f (random %.4f)",
                          l, kind_text.c_str(), h, q.recall, q.random_recall, q.mass, q.random_mass, q.out_rel_err,
                          q.random_out_rel_err);
    }
  }
  ImGui::Dummy(ImVec2(label_w + cell_w * heads, cell_h * static_cast<float>(pa.layers.size() + 1)));
  return click;
}

}  // namespace hipstudio::gui
