#include "app/gui/chart_draw.h"

#include <algorithm>
#include <cmath>

#include "app/gui/widgets.h"
#include "viz/chart_svg.h"

namespace hipstudio::gui {
namespace {

// A polyline with 6-on, 4-off dashes (pixels at 1x), the SVG's stroke-dasharray "6 4".
void dashed_line(ImDrawList* dl, const std::vector<ImVec2>& pts, ImU32 color, float thickness, float scale) {
  const float on = 6 * scale, off = 4 * scale;
  float phase = 0;  // distance into the current on+off period
  for (size_t i = 1; i < pts.size(); ++i) {
    const ImVec2 a = pts[i - 1], b = pts[i];
    const float len = std::hypot(b.x - a.x, b.y - a.y);
    float t = 0;
    while (t < len) {
      const bool drawing = phase < on;
      const float step = std::min(len - t, drawing ? on - phase : on + off - phase);
      if (drawing && len > 0) {
        const ImVec2 p0(a.x + (b.x - a.x) * t / len, a.y + (b.y - a.y) * t / len);
        const ImVec2 p1(a.x + (b.x - a.x) * (t + step) / len, a.y + (b.y - a.y) * (t + step) / len);
        dl->AddLine(p0, p1, color, thickness);
      }
      t += step;
      phase = std::fmod(phase + step, on + off);
    }
  }
}

void draw_series(const PlotArea& p, const viz::ChartSeries& s, ImU32 color, ImU32 background, float scale) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  if (s.mark == viz::ChartMark::Bars) {
    const ImU32 fill = (color & 0x00ffffffu) | (static_cast<ImU32>(std::clamp(s.opacity, 0.0f, 1.0f) * 255) << 24);
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      const double base = i < s.base.size() ? s.base[i] : 0.0;
      const ImVec2 a = p.at(s.x[i] - s.bar_width / 2, base + s.y[i]), b = p.at(s.x[i] + s.bar_width / 2, base);
      dl->AddRectFilled(ImVec2(std::min(a.x, b.x), std::min(a.y, b.y)), ImVec2(std::max(a.x + 1, b.x - 0.5f), std::max(a.y, b.y)), fill);
    }
    return;
  }
  const bool points = s.mark == viz::ChartMark::Points;
  std::vector<std::vector<ImVec2>> runs(1);
  for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
    if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || (p.log_x && !(s.x[i] > 0))) {
      if (!s.bridge_gaps && !runs.back().empty()) runs.emplace_back();
      continue;
    }
    runs.back().push_back(p.at(s.x[i], s.y[i]));
  }
  for (const auto& run : runs) {
    if (!points && run.size() > 1) {
      if (s.dashed) dashed_line(dl, run, color, s.width * scale, scale);
      else dl->AddPolyline(run.data(), static_cast<int>(run.size()), color, ImDrawFlags_None, s.width * scale);
    }
    if (points || s.markers)
      for (const ImVec2& at : run) {
        // As in the SVG: a dashed series' markers are rings, so the dots of a solid one under it show.
        const float r = (points ? s.width : s.dashed ? 2.2f : 3.0f) * scale;
        if (s.dashed && !points) {
          dl->AddCircleFilled(at, r, background);
          dl->AddCircle(at, r, color, 0, 1.4f * scale);
        } else {
          dl->AddCircleFilled(at, r, color);
        }
      }
  }
}

}  // namespace

viz::FigureStyle theme_figure_style(const Theme& theme) { return theme.dark ? viz::dark_style() : viz::paper_style(); }

void draw_chart(const char* id, const viz::Chart& chart, ImVec2 size, const Theme& theme) {
  const viz::FigureStyle style = theme_figure_style(theme);
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const size_t n = std::max<size_t>(1, chart.plots.size());
  if (size.x <= 0) size.x = ImGui::GetContentRegionAvail().x;
  const float w = (size.x - gap * static_cast<float>(n - 1)) / static_cast<float>(n);
  for (size_t i = 0; i < chart.plots.size(); ++i) {
    const viz::ChartPlot& plot = chart.plots[i];
    const viz::ChartRange r = viz::chart_range(plot);
    // The range is in log2 units on a log axis; the plot area maps raw values itself.
    const double x0 = plot.x.log2 ? std::exp2(r.x0) : r.x0, x1 = plot.x.log2 ? std::exp2(r.x1) : r.x1;
    if (i > 0) ImGui::SameLine();
    const std::string pid = std::string("##") + id + std::to_string(i);
    PlotArea p = begin_plot(pid.c_str(), ImVec2(w, size.y), x0, x1, r.y0, r.y1, plot.x.label.c_str(), plot.y.label.c_str(), theme, plot.x.log2);
    for (const viz::ChartSeries& s : plot.series)
      draw_series(p, s, viz::chart_color(style, s.color, s.fixed_color), style.background, theme.scale);
    for (const viz::ChartText& t : plot.texts) {
      const ImVec2 at = p.at(t.x, t.y);
      const ImVec2 ts = ImGui::CalcTextSize(t.text.c_str());
      ImGui::GetWindowDrawList()->AddText(ImVec2(at.x - ts.x / 2, at.y - ts.y - 2), ImGui::GetColorU32(ImGuiCol_Text), t.text.c_str());
    }
    end_plot();
  }
  // The legend lists what the plots drew (chart_legend), notes as plain text.
  for (const viz::ChartLegendEntry& e : viz::chart_legend(chart)) {
    if (e.note) {
      ImGui::SameLine();
      ImGui::TextUnformatted(e.name.c_str());
      continue;
    }
    legend_item(viz::chart_color(style, e.color, e.fixed_color), e.name.c_str());
  }
}

}  // namespace hipstudio::gui
