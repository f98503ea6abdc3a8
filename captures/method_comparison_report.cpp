#include "captures/method_comparison_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "captures/svg_plots.h"
#include "viz/number_text.h"

namespace hipstudio::captures {
namespace {

std::string cell(double v, const char* format) { return viz::number_text(v, format, "n/a"); }

}  // namespace

std::vector<MethodRow> method_rows(const Capture& c) {
  std::vector<MethodRow> rows;
  const std::vector<LayerQuality>& layers = c.analysis.layers;
  for (const CapturedMethod& m : c.methods)
    rows.push_back({m.choice.name, method_mean(m, layers, &HeadQuality::recall), method_mean(m, layers, &HeadQuality::mass),
                    method_mean(m, layers, &HeadQuality::out_rel_err), m.kl, m.top1_agreement, m.side.ppl});
  return rows;
}

std::string method_table_html(const Capture& c) {
  std::ostringstream s;
  s << "<table class=\"methods\">\n<tr><th>method</th><th>recall</th><th>mass</th><th>output rel. error</th><th>KL(dense || method)</th>"
       "<th>top-1 agreement</th><th>perplexity</th></tr>\n";
  for (const MethodRow& r : method_rows(c))
    s << "<tr><td>" << xml_escape(r.name) << "</td><td class=\"n\">" << cell(r.recall, "%.4f") << "</td><td class=\"n\">"
      << cell(r.mass, "%.4f") << "</td><td class=\"n\">" << cell(r.out_rel_err, "%.5f") << "</td><td class=\"n\">"
      << cell(r.kl, "%.6f") << "</td><td class=\"n\">" << cell(r.top1_agreement, "%.4f") << "</td><td class=\"n\">"
      << cell(r.ppl, "%.4f") << "</td></tr>\n";
  s << "</table>\n";
  return s.str();
}

std::string svg_method_layers(const Capture& c, double HeadQuality::*field, const std::string& title, const std::string& y_label,
                              const viz::FigureStyle& style, const std::string& context) {
  std::vector<PlotSeries> series;
  for (const CapturedMethod& m : c.methods) {
    PlotSeries p;
    p.name = m.choice.name;
    for (size_t l = 0; l < m.quality.size(); ++l) {
      double sum = 0;
      int64_t n = 0;
      for (const HeadQuality& h : m.quality[l])
        if (std::isfinite(h.*field)) sum += h.*field, ++n;
      p.x.push_back(static_cast<double>(l));
      p.y.push_back(n ? sum / static_cast<double>(n) : NAN);
    }
    series.push_back(std::move(p));
  }
  return svg_line_chart(title, "layer", y_label, series, false, NAN, NAN, style, context);
}

}  // namespace hipstudio::captures
