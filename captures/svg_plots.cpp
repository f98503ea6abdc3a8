#include "captures/svg_plots.h"
#include "captures/hit_ratio_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "viz/chart_svg.h"
#include "viz/colormap.h"
#include "viz/locality_chart.h"
#include "viz/number_text.h"

namespace hipstudio::captures {
namespace {

// A PlotSeries as a chart series: its CSS colour fixed where given, else series colour `k`.
viz::ChartSeries chart_series(const PlotSeries& p, size_t k) {
  viz::ChartSeries c;
  c.name = p.name;
  c.x = p.x;
  c.y = p.y;
  c.color = static_cast<int>(k);
  unsigned r = 0, g = 0, b = 0;
  if (p.color.size() == 7 && std::sscanf(p.color.c_str(), "#%2x%2x%2x", &r, &g, &b) == 3)
    c.fixed_color = viz::pack_rgba8(static_cast<uint8_t>(r), static_cast<uint8_t>(g), static_cast<uint8_t>(b));
  c.markers = p.markers;
  c.dashed = !p.dash.empty();
  c.bridge_gaps = p.bridge_gaps;
  return c;
}

// A view pooled under another rule than the panel's says what it pooled before the run's context.
std::string noted_context(const LocalityView& v, const std::string& context) {
  return v.rule_note.empty() ? context : "pooled over " + v.rule_note + "; " + context;
}

}  // namespace

bool cpu_reference_device(const std::string& device) { return device.empty() || device.rfind("cpu", 0) == 0; }

std::string svg_line_chart(const std::string& title, const std::string& xl, const std::string& yl,
                           const std::vector<PlotSeries>& series, bool log2_x, double y_lo, double y_hi, const viz::FigureStyle& st,
                           const std::string& context) {
  viz::Chart chart;
  chart.title = title;
  viz::ChartPlot plot;
  plot.x.label = xl;
  plot.x.log2 = log2_x;
  plot.y.label = yl;
  plot.y.lo = y_lo;
  plot.y.hi = y_hi;
  for (size_t k = 0; k < series.size(); ++k) plot.series.push_back(chart_series(series[k], k));
  chart.plots.push_back(std::move(plot));
  return viz::svg_chart(chart, st, context);
}

std::string svg_locality_histogram(const LocalityView& v, const std::string& title, const viz::FigureStyle& st,
                                   const std::string& context) {
  return viz::svg_chart(viz::locality_histogram_chart(v, title), st, noted_context(v, context));
}

std::string svg_locality(const std::vector<LocalityView>& heads, const std::string& title, const viz::FigureStyle& st,
                         const std::string& context) {
  return viz::svg_chart(viz::locality_chart(heads, title), st, heads.empty() ? context : noted_context(heads[0], context));
}

std::string svg_hit_ratio_per_step(const offload::OffloadResult& r, const viz::FigureStyle& st, const std::string& context) {
  return viz::svg_chart(hit_ratio_step_chart(r), st, context);
}

std::string svg_latency_bars(const PairedAnalysis& a, const std::string& device, const viz::FigureStyle& st, const std::string& context) {
  const ComponentMs bars[4] = {a.dense.latency.prefill, a.hip.latency.prefill, a.dense.latency.decode_step, a.hip.latency.decode_step};
  const std::vector<std::string> names{"dense prefill", "HiP prefill", "dense decode", "HiP decode"};
  const char* parts[4] = {"mask estimation", "sparse attention", "dense attention", "other"};
  const int colors[4] = {2, 1, 0, -1};  // "other" in the text colour: it is not a part of attention
  double top = 0;
  for (const ComponentMs& b : bars) top = std::max(top, b.total());
  viz::ChartPlot plot;
  plot.x.label = "run";
  plot.x.categories = names;
  plot.x.lo = -0.6, plot.x.hi = 3.6;
  plot.y.label = "milliseconds";
  plot.y.lo = 0, plot.y.hi = top > 0 ? top * 1.08 : 1;
  double base[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; ++k) {
    // One series per component, stacked on the ones before it.
    viz::ChartSeries s;
    s.name = parts[k];
    s.mark = viz::ChartMark::Bars;
    s.color = colors[k];
    s.bar_width = 0.6;
    for (int i = 0; i < 4; ++i) {
      const double v[4] = {bars[i].mask, bars[i].sparse, bars[i].dense, bars[i].other};
      const double h = v[k] > 0 ? v[k] : 0.0;
      s.x.push_back(i), s.y.push_back(h), s.base.push_back(base[i]);
      s.tips.push_back(names[static_cast<size_t>(i)] + ": " + parts[k] + " " + viz::figure_number(h) + " ms");
      base[i] += h;
    }
    plot.series.push_back(std::move(s));
  }
  for (int i = 0; i < 4; ++i) plot.texts.push_back({static_cast<double>(i), base[i], viz::figure_number(base[i])});
  viz::Chart chart;
  // On the CPU HiP runs the float64 reference: the bars are a correctness run's wall-clock, said in
  // the title as the Latency panel says it, and no ratio of the two sides is drawn.
  chart.title = cpu_reference_device(device) ? "Latency on " + device + ": HiP is the float64 CPU reference, not a speed measurement"
                                             : "Latency breakdown on " + device + " (ms; decode: mean per step)";
  chart.plots.push_back(std::move(plot));
  return viz::svg_chart(chart, st, context);
}

}  // namespace hipstudio::captures
