#include "viz/locality_chart.h"

#include <cstdio>

#include "viz/number_text.h"

namespace hipstudio::viz {
namespace {

ChartPlot histogram_plot(const LocalityView& v) {
  const hip::DeltaStats& d = v.histogram;
  ChartPlot p;
  p.x.label = "delta = s(j + " + std::to_string(d.delta) + ") - s(j)";
  p.y.label = "key pairs";
  p.y.lo = 0;
  const size_t bins = d.counts.size();
  const double width = bins && d.hist_hi > d.hist_lo ? (d.hist_hi - d.hist_lo) / static_cast<double>(bins) : 1;
  ChartSeries bars;
  bars.name = "observed (Delta = " + std::to_string(d.delta) + ")";
  bars.mark = ChartMark::Bars;
  bars.bar_width = width;
  bars.opacity = 0.75f;
  ChartSeries fit;
  fit.name = "N(" + figure_number(d.mean) + ", " + figure_number(d.stddev) + "^2)";
  fit.color = 1;
  fit.width = 2;
  fit.svg_class = "normal-fit";
  for (size_t b = 0; b < bins; ++b) {
    const double centre = d.hist_lo + width * (static_cast<double>(b) + 0.5);
    bars.x.push_back(centre);
    bars.y.push_back(static_cast<double>(d.counts[b]));
    if (b < v.fitted.size()) fit.x.push_back(centre), fit.y.push_back(v.fitted[b]);
  }
  p.series.push_back(std::move(bars));
  if (d.stddev > 0 && d.pairs > 0) p.series.push_back(std::move(fit));  // no spread: no normal to draw
  p.notes.push_back("KL " + figure_number(d.kl_to_normal));
  return p;
}

}  // namespace

Chart locality_histogram_chart(const LocalityView& view, const std::string& title) {
  Chart c;
  c.title = title;
  c.plots.push_back(histogram_plot(view));
  return c;
}

Chart locality_chart(const std::vector<LocalityView>& heads, const std::string& title) {
  Chart c;
  c.title = title;
  if (heads.empty()) return c;
  c.plots.push_back(histogram_plot(heads[0]));
  ChartPlot curves;
  curves.x.label = "Delta (key distance)";
  curves.x.log2 = true;
  curves.y.label = "delta score: mean, std";
  for (size_t h = 0; h < heads.size(); ++h) {
    ChartSeries mean, sd;
    mean.name = "head " + std::to_string(heads[h].head) + " mean";
    sd.name = "head " + std::to_string(heads[h].head) + " std";
    mean.color = static_cast<int>(2 * h), sd.color = static_cast<int>(2 * h + 1);
    mean.markers = sd.markers = true;
    for (const hip::DeltaStats& d : heads[h].curve) {
      mean.x.push_back(static_cast<double>(d.delta)), mean.y.push_back(d.mean);
      sd.x.push_back(static_cast<double>(d.delta)), sd.y.push_back(d.stddev);
    }
    curves.series.push_back(std::move(mean));
    curves.series.push_back(std::move(sd));
  }
  const hip::DeltaStats& shown = heads[0].histogram;
  if (shown.pairs > 0) {
    ChartSeries at;
    at.name = "histogram's Delta (head " + std::to_string(heads[0].head) + ")";
    at.mark = ChartMark::Points;
    at.color = -1;
    at.width = 4;
    at.x = {static_cast<double>(shown.delta), static_cast<double>(shown.delta)};
    at.y = {shown.mean, shown.stddev};
    curves.series.push_back(std::move(at));
  }
  c.plots.push_back(std::move(curves));
  return c;
}

}  // namespace hipstudio::viz
