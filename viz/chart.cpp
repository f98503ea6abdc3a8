#include "viz/chart.h"

#include <algorithm>

namespace hipstudio::viz {
namespace {

void widen(double& lo, double& hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi <= lo) {
    const double pad = lo == 0 ? 0.5 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
}

}  // namespace

ChartRange chart_range(const ChartPlot& plot) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto tx = [&](double x) { return plot.x.log2 ? std::log2(x) : x; };
  auto take = [&](double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y)) return;
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  };
  for (const ChartSeries& s : plot.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (s.mark == ChartMark::Bars) {
        const double b = i < s.base.size() ? s.base[i] : 0.0;
        take(tx(s.x[i] - s.bar_width / 2), b);
        take(tx(s.x[i] + s.bar_width / 2), b + s.y[i]);
      } else {
        take(tx(s.x[i]), s.y[i]);
      }
    }
  if (std::isfinite(plot.x.lo)) x0 = tx(plot.x.lo);
  if (std::isfinite(plot.x.hi)) x1 = tx(plot.x.hi);
  if (std::isfinite(plot.y.lo)) y0 = plot.y.lo;
  if (std::isfinite(plot.y.hi)) y1 = plot.y.hi;
  widen(x0, x1);
  widen(y0, y1);
  const double pad = (y1 - y0) * 0.05;
  return {x0, x1, std::isfinite(plot.y.lo) ? y0 : y0 - pad, std::isfinite(plot.y.hi) ? y1 : y1 + pad};
}

std::vector<ChartLegendEntry> chart_legend(const Chart& chart) {
  std::vector<ChartLegendEntry> out;
  for (const ChartPlot& p : chart.plots)
    for (const ChartSeries& s : p.series) {
      if (s.name.empty()) continue;
      const bool seen = std::any_of(out.begin(), out.end(), [&](const ChartLegendEntry& e) {
        return e.name == s.name && e.color == s.color && e.fixed_color == s.fixed_color;
      });
      if (!seen) out.push_back({s.name, s.mark, s.color, s.fixed_color, s.dashed, s.markers, false});
    }
  for (const ChartPlot& p : chart.plots)
    for (const std::string& n : p.notes) out.push_back({n, ChartMark::Line, 0, 0, false, false, true});
  return out;
}

}  // namespace hipstudio::viz
