#include "captures/svg_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "viz/plot_data.h"

namespace hipstudio::captures {
namespace {

// kTop leaves room for the title and two lines of context (model, device, dtype, T, parameters).
constexpr double kW = 720, kH = 420, kLeft = 72, kRight = 210, kTop = 66, kBottom = 56;  // px

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}
std::string px(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

// A plot area in px; a figure holds one (kPlot) or several side by side.
struct Box {
  double left, top, right, bottom;
};
constexpr Box kPlot{kLeft, kTop, kW - kRight, kH - kBottom};

struct Frame {
  double x0, x1, y0, y1;  // data range (log2 of x on a log axis)
  Box box = kPlot;
  double sx(double x) const { return box.left + (x - x0) / (x1 - x0) * (box.right - box.left); }
  double sy(double y) const { return box.bottom - (y - y0) / (y1 - y0) * (box.bottom - box.top); }
};

void widen(double& lo, double& hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi <= lo) {
    const double pad = lo == 0 ? 0.5 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
}

// The figure's colours for the duration of one document (the helpers below draw in them).
thread_local const viz::FigureStyle* g_style = nullptr;
const viz::FigureStyle& style() {
  static const viz::FigureStyle paper = viz::paper_style();
  return g_style ? *g_style : paper;
}
std::string col(uint32_t packed) { return viz::css_color(packed); }
// Series k's colour in the figure's style.
std::string series_col(size_t k) { return col(style().series_color(k)); }
struct StyleScope {
  const viz::FigureStyle* saved = g_style;
  explicit StyleScope(const viz::FigureStyle& s) { g_style = &s; }
  ~StyleScope() { g_style = saved; }
};

// Words of `text` in lines of at most `chars` characters (the context line under the title).
std::vector<std::string> wrap_chars(const std::string& text, size_t chars) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  while (in >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > chars) lines.push_back(line), line.clear();
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// The document, its background in the style's colour, the title and up to two lines of context
// under it (the text's default fill is the style's text colour).
void open_svg(std::ostringstream& s, const std::string& title, const std::string& context, double width = kW) {
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << kH << "\" viewBox=\"0 0 " << width << " " << kH
    << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\" fill=\"" << col(style().text) << "\">\n"
    << "<title>" << xml_escape(title) << "</title>\n<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\""
    << col(style().background) << "\"/>\n"
    << "<text class=\"title\" x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">"
    << xml_escape(title) << "</text>\n";
  std::vector<std::string> lines = wrap_chars(context, static_cast<size_t>(width / 6.2));
  if (lines.size() > 2) lines.resize(2);
  for (size_t i = 0; i < lines.size(); ++i)
    s << "<text class=\"context\" x=\"" << width / 2 << "\" y=\"" << 40 + 14 * static_cast<double>(i)
      << "\" text-anchor=\"middle\" font-size=\"11\" fill=\"" << col(style().text_dim) << "\">" << xml_escape(lines[i]) << "</text>\n";
}

// Axes, ticks, grid and labels. x_names: category labels at integer x instead of numeric ticks.
// Tick values and labels follow the screen's plots (viz::nice_ticks / log_ticks / tick_label, one
// tick per five font heights along x), so an exported figure reads like the panel it comes from.
void axes(std::ostringstream& s, const Frame& f, const std::string& xl, const std::string& yl, bool log2_x,
          const std::vector<std::string>& x_names = {}) {
  const Box& b = f.box;
  s << "<g class=\"axes\" stroke=\"" << col(style().axis) << "\" fill=\"none\">\n<line x1=\"" << px(b.left) << "\" y1=\"" << px(b.bottom) << "\" x2=\""
    << px(b.right) << "\" y2=\"" << px(b.bottom) << "\"/>\n<line x1=\"" << px(b.left) << "\" y1=\"" << px(b.top) << "\" x2=\""
    << px(b.left) << "\" y2=\"" << px(b.bottom) << "\"/>\n</g>\n<g class=\"ticks\" font-size=\"11\">\n";
  for (double v : viz::nice_ticks(f.y0, f.y1, 4)) {
    const double y = f.sy(v);
    s << "<line x1=\"" << px(b.left - 4) << "\" y1=\"" << px(y) << "\" x2=\"" << px(b.right) << "\" y2=\"" << px(y)
      << "\" stroke=\"" << col(style().grid) << "\"/><text class=\"y-tick\" x=\"" << px(b.left - 7) << "\" y=\"" << px(y + 4) << "\" text-anchor=\"end\">"
      << viz::tick_label(v) << "</text>\n";
  }
  std::vector<std::pair<double, std::string>> xt;
  if (!x_names.empty()) {
    for (size_t i = 0; i < x_names.size(); ++i) xt.emplace_back(static_cast<double>(i), x_names[i]);
  } else if (log2_x) {
    for (double v : viz::log_ticks(std::exp2(f.x0), std::exp2(f.x1))) xt.emplace_back(std::log2(v), viz::tick_label(v));
  } else {
    const int target = std::max(2, static_cast<int>((b.right - b.left) / (12 * 5)));
    for (double v : viz::nice_ticks(f.x0, f.x1, target)) xt.emplace_back(v, viz::tick_label(v));
  }
  for (const auto& [v, label] : xt) {
    const double x = f.sx(v);
    s << "<line x1=\"" << px(x) << "\" y1=\"" << px(b.bottom) << "\" x2=\"" << px(x) << "\" y2=\"" << px(b.bottom + 4)
      << "\" stroke=\"" << col(style().axis) << "\"/><text class=\"x-tick\" x=\"" << px(x) << "\" y=\"" << px(b.bottom + 17) << "\" text-anchor=\"middle\">"
      << xml_escape(label) << "</text>\n";
  }
  const double ly = (b.top + b.bottom) / 2, lx = b.left - 56;
  s << "</g>\n<text class=\"x-label\" x=\"" << px((b.left + b.right) / 2) << "\" y=\"" << px(b.bottom + 42) << "\" text-anchor=\"middle\">"
    << xml_escape(xl) << "</text>\n<text class=\"y-label\" x=\"" << px(lx) << "\" y=\"" << px(ly)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 " << px(lx) << " " << px(ly) << ")\">" << xml_escape(yl) << "</text>\n";
}

struct LegendItem {
  std::string name, color;
  std::string dash = "";  // a line series' stroke-dasharray ("" and line: a solid line sample)
  bool line = false;      // false: a filled swatch
  bool marker = false;    // a line series' marker drawn on the sample (a ring when dashed)
};

// Items listed top to bottom right of the plot area ending at `right`.
void legend(std::ostringstream& s, const std::vector<LegendItem>& items, double right = kW - kRight) {
  s << "<g class=\"legend\">\n";
  for (size_t i = 0; i < items.size(); ++i) {
    const double y = kTop + 8 + 18 * static_cast<double>(i);
    if (items[i].line) {
      s << "<line x1=\"" << px(right + 10) << "\" y1=\"" << px(y - 4) << "\" x2=\"" << px(right + 26) << "\" y2=\"" << px(y - 4)
        << "\" stroke=\"" << items[i].color << "\" stroke-width=\"2\"" << (items[i].dash.empty() ? "" : " stroke-dasharray=\"" + items[i].dash + "\"")
        << "/>";
      if (items[i].marker)
        s << "<circle cx=\"" << px(right + 18) << "\" cy=\"" << px(y - 4) << "\" r=\"" << (items[i].dash.empty() ? "3" : "2.2") << "\" "
          << (items[i].dash.empty() ? "fill=\"" + items[i].color + "\""
                                    : "fill=\"" + col(style().background) + "\" stroke=\"" + items[i].color + "\" stroke-width=\"1.4\"")
          << "/>";
    } else {
      s << "<rect x=\"" << px(right + 12) << "\" y=\"" << px(y - 9) << "\" width=\"12\" height=\"10\" fill=\"" << items[i].color << "\"/>";
    }
    s << "<text x=\"" << px(right + 30) << "\" y=\"" << px(y) << "\">" << xml_escape(items[i].name) << "</text>\n";
  }
  s << "</g>\n";
}

// The frame a line chart of `series` needs (y padded by 5% where not fixed).
Frame series_frame(const std::vector<PlotSeries>& series, bool log2_x, double y_lo, double y_hi, Box box) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto tx = [&](double x) { return log2_x ? std::log2(x) : x; };
  for (const PlotSeries& p : series)
    for (size_t i = 0; i < p.x.size() && i < p.y.size(); ++i)
      if (std::isfinite(tx(p.x[i])) && std::isfinite(p.y[i])) {
        x0 = std::min(x0, tx(p.x[i])), x1 = std::max(x1, tx(p.x[i]));
        y0 = std::min(y0, p.y[i]), y1 = std::max(y1, p.y[i]);
      }
  if (std::isfinite(y_lo)) y0 = y_lo;
  if (std::isfinite(y_hi)) y1 = y_hi;
  widen(x0, x1);
  widen(y0, y1);
  const double pad = (y1 - y0) * 0.05;
  return Frame{x0, x1, std::isfinite(y_lo) ? y0 : y0 - pad, std::isfinite(y_hi) ? y1 : y1 + pad, box};
}

// Draws the series in order (later over earlier) and appends their legend items.
void draw_series(std::ostringstream& s, const Frame& f, const std::vector<PlotSeries>& series, bool log2_x,
                 std::vector<LegendItem>& items) {
  auto tx = [&](double x) { return log2_x ? std::log2(x) : x; };
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& p = series[k];
    const std::string color = p.color.empty() ? series_col(k) : p.color;
    items.push_back({p.name, color, p.dash, true, p.markers});
    // A non-finite point breaks the line (a step without accesses has no hit ratio).
    std::vector<std::string> lines(1);
    std::string marks;
    // A dashed series' markers are rings, so that a solid series' dots under them still show.
    const std::string mark_paint = p.dash.empty() ? "fill=\"" + color + "\"" : "fill=\"" + col(style().background) + "\" stroke=\"" + color + "\" stroke-width=\"1.4\"";
    for (size_t i = 0; i < p.x.size() && i < p.y.size(); ++i) {
      if (!std::isfinite(tx(p.x[i])) || !std::isfinite(p.y[i])) {
        if (!p.bridge_gaps && !lines.back().empty()) lines.emplace_back();
        continue;
      }
      lines.back() += px(f.sx(tx(p.x[i]))) + "," + px(f.sy(p.y[i])) + " ";
      if (p.markers)
        marks += "<circle cx=\"" + px(f.sx(tx(p.x[i]))) + "\" cy=\"" + px(f.sy(p.y[i])) + "\" r=\"" + (p.dash.empty() ? "3" : "2.2") +
                 "\" " + mark_paint + "/>";
    }
    s << "<g class=\"series\">";
    for (const std::string& l : lines)
      if (!l.empty())
        s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.6\""
          << (p.dash.empty() ? "" : " stroke-dasharray=\"" + p.dash + "\"") << " points=\"" << l << "\"/>";
    s << marks << "</g>\n";
  }
}

// The histogram of one Delta as the locality panel draws it: bars of the counts and the view's
// fitted normal's expected count per bin through the bin centres.
void draw_histogram(std::ostringstream& s, const LocalityView& v, Box box, std::vector<LegendItem>& items) {
  const hip::DeltaStats& d = v.histogram;
  const size_t bins = d.counts.size();
  const double width = bins ? (d.hist_hi - d.hist_lo) / static_cast<double>(bins) : 1;
  const std::vector<double>& fitted = v.fitted;
  double top = 1;
  for (int64_t c : d.counts) top = std::max(top, static_cast<double>(c));
  for (double c : fitted) top = std::max(top, c);
  double lo = d.hist_lo, hi = d.hist_hi;
  widen(lo, hi);
  const Frame f{lo, hi, 0, top * 1.05, box};
  axes(s, f, "delta = s(j + " + std::to_string(d.delta) + ") - s(j)", "key pairs", false);
  s << "<g class=\"bars\" fill=\"" << series_col(0) << "\" fill-opacity=\"0.75\">\n";
  for (size_t b = 0; b < bins; ++b) {
    const double xa = f.sx(d.hist_lo + width * static_cast<double>(b)), xb = f.sx(d.hist_lo + width * static_cast<double>(b + 1));
    const double y = f.sy(static_cast<double>(d.counts[b]));
    s << "<rect class=\"bar\" x=\"" << px(xa) << "\" y=\"" << px(y) << "\" width=\"" << px(std::max(0.5, xb - xa - 0.5)) << "\" height=\""
      << px(f.sy(0) - y) << "\"/>\n";
  }
  s << "</g>\n";
  if (d.stddev > 0 && d.pairs > 0) {
    s << "<polyline class=\"normal-fit\" fill=\"none\" stroke=\"" << series_col(1) << "\" stroke-width=\"2\" points=\"";
    for (size_t b = 0; b < bins; ++b) s << px(f.sx(d.hist_lo + width * (static_cast<double>(b) + 0.5))) << "," << px(f.sy(fitted[b])) << " ";
    s << "\"/>\n";
  }
  items.push_back({"observed (Delta = " + std::to_string(d.delta) + ")", series_col(0)});
  items.push_back({"N(" + num(d.mean) + ", " + num(d.stddev) + "^2)", series_col(1), "", true});
  items.push_back({"KL " + num(d.kl_to_normal), col(style().background)});
}

// Mean and std of delta against Delta, a pair of curves per head.
std::vector<PlotSeries> locality_series(const std::vector<LocalityView>& heads) {
  std::vector<PlotSeries> series;
  for (size_t h = 0; h < heads.size(); ++h) {
    PlotSeries mean{"head " + std::to_string(heads[h].head) + " mean", {}, {}, series_col(2 * h), true, ""};
    PlotSeries sd{"head " + std::to_string(heads[h].head) + " std", {}, {}, series_col(2 * h + 1), true, ""};
    for (const hip::DeltaStats& d : heads[h].curve) {
      mean.x.push_back(static_cast<double>(d.delta));
      mean.y.push_back(d.mean);
      sd.x.push_back(static_cast<double>(d.delta));
      sd.y.push_back(d.stddev);
    }
    series.push_back(mean);
    series.push_back(sd);
  }
  return series;
}

// A view pooled under another rule than the panel's says what it pooled before the run's context.
std::string noted_context(const LocalityView& v, const std::string& context) {
  return v.rule_note.empty() ? context : "pooled over " + v.rule_note + "; " + context;
}

}  // namespace

bool cpu_reference_device(const std::string& device) { return device.empty() || device.rfind("cpu", 0) == 0; }

std::string xml_escape(const std::string& t) {
  std::string o;
  for (char ch : t) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') o += ' ';
        else o += ch;
    }
  }
  return o;
}

std::string svg_line_chart(const std::string& title, const std::string& xl, const std::string& yl,
                           const std::vector<PlotSeries>& series, bool log2_x, double y_lo, double y_hi, const viz::FigureStyle& st,
                           const std::string& context) {
  const StyleScope scope(st);
  const Frame f = series_frame(series, log2_x, y_lo, y_hi, kPlot);
  std::ostringstream s;
  open_svg(s, title, context);
  axes(s, f, xl, yl, log2_x);
  std::vector<LegendItem> items;
  draw_series(s, f, series, log2_x, items);
  legend(s, items);
  s << "</svg>\n";
  return s.str();
}

std::string svg_locality_histogram(const LocalityView& v, const std::string& title, const viz::FigureStyle& st,
                                   const std::string& context) {
  const StyleScope scope(st);
  std::ostringstream s;
  open_svg(s, title, noted_context(v, context));
  std::vector<LegendItem> items;
  draw_histogram(s, v, kPlot, items);
  legend(s, items);
  s << "</svg>\n";
  return s.str();
}

std::string svg_locality(const std::vector<LocalityView>& heads, const std::string& title, const viz::FigureStyle& st,
                         const std::string& context) {
  const StyleScope scope(st);
  // Two plots side by side, as the locality panel shows them: the histogram, then the curves.
  constexpr double kWide = 2 * kW - kRight;
  const Box hist_box{kLeft, kTop, kW - kRight, kH - kBottom};
  const Box curve_box{kW - kRight + kLeft + 24, kTop, kWide - kRight, kH - kBottom};
  std::ostringstream s;
  open_svg(s, title, heads.empty() ? context : noted_context(heads[0], context), kWide);
  std::vector<LegendItem> items;
  if (!heads.empty()) draw_histogram(s, heads[0], hist_box, items);
  const std::vector<PlotSeries> series = locality_series(heads);
  const Frame f = series_frame(series, true, NAN, NAN, curve_box);
  axes(s, f, "Delta (key distance)", "delta score: mean, std", true);
  draw_series(s, f, series, true, items);
  legend(s, items, kWide - kRight);
  s << "</svg>\n";
  return s.str();
}

std::string svg_hit_ratio_per_step(const offload::OffloadResult& r, const viz::FigureStyle& st, const std::string& context) {
  std::vector<PlotSeries> series;
  // Both contexts often read the same keys, so their curves coincide: sparse attention is drawn
  // first and solid, mask estimation over it dashed with ring markers, so neither hides the other.
  for (int c : {1, 0}) {
    const offload::ContextStats& ctx = c == 0 ? r.mask : r.sparse;
    const char* name = c == 0 ? "mask estimation" : "sparse attention";  // legend: name (bank slots)
    PlotSeries p{std::string(name) + " (" + std::to_string(ctx.bank_tokens) + ")", {}, {}, viz::css_color(st.series_color(static_cast<size_t>(c))), true, c == 0 ? "6 4" : ""};
    // Mask estimation reads only on refresh steps: its points are joined across the steps between,
    // so the dashed line the legend shows is what the plot draws.
    p.bridge_gaps = true;
    for (size_t s = 0; s < ctx.per_step_total.size(); ++s) {
      const offload::BankCounts& b = ctx.per_step_total[s];
      p.x.push_back(static_cast<double>(s));
      p.y.push_back(b.accesses > 0 ? offload::hit_ratio(b) : NAN);  // no reads: no ratio (steps without a refresh)
    }
    series.push_back(p);
  }
  return svg_line_chart("KV offloading: hit ratio per decode step", "decode step", "hit ratio", series, false, 0.0, 1.0, st, context);
}

std::string svg_latency_bars(const PairedAnalysis& a, const std::string& device, const viz::FigureStyle& st, const std::string& context) {
  const StyleScope scope(st);
  const ComponentMs bars[4] = {a.dense.latency.prefill, a.hip.latency.prefill, a.dense.latency.decode_step, a.hip.latency.decode_step};
  const std::vector<std::string> names{"dense prefill", "HiP prefill", "dense decode", "HiP decode"};
  const char* parts[4] = {"mask estimation", "sparse attention", "dense attention", "other"};
  const std::string colors[4] = {series_col(2), series_col(1), series_col(0), col(style().text_dim)};
  double top = 0;
  for (const ComponentMs& b : bars) top = std::max(top, b.total());
  Frame f{-0.6, 3.6, 0, top > 0 ? top * 1.08 : 1};
  std::ostringstream s;
  // On the CPU HiP runs the float64 reference: the bars are a correctness run's wall-clock, said in
  // the title as the Latency panel says it, and no ratio of the two sides is drawn.
  const bool cpu = cpu_reference_device(device);
  open_svg(s, cpu ? "Latency on " + device + ": HiP is the float64 CPU reference, not a speed measurement"
                  : "Latency breakdown on " + device + " (ms; decode: mean per step)",
           context);
  axes(s, f, "run", "milliseconds", false, names);
  const double bw = (f.sx(1) - f.sx(0)) * 0.6;
  for (int i = 0; i < 4; ++i) {
    const double v[4] = {bars[i].mask, bars[i].sparse, bars[i].dense, bars[i].other};
    double base = 0;
    s << "<g class=\"bar\">";
    for (int k = 0; k < 4; ++k) {
      if (!(v[k] > 0)) continue;
      const double ya = f.sy(base + v[k]), yb = f.sy(base);
      s << "<rect x=\"" << px(f.sx(i) - bw / 2) << "\" y=\"" << px(ya) << "\" width=\"" << px(bw) << "\" height=\"" << px(yb - ya)
        << "\" fill=\"" << colors[k] << "\"><title>" << xml_escape(names[i]) << ": " << parts[k] << " " << num(v[k]) << " ms</title></rect>";
      base += v[k];
    }
    s << "<text x=\"" << px(f.sx(i)) << "\" y=\"" << px(f.sy(base) - 4) << "\" text-anchor=\"middle\" font-size=\"11\">" << num(base)
      << "</text></g>\n";
  }
  legend(s, {{parts[0], colors[0]}, {parts[1], colors[1]}, {parts[2], colors[2]}, {parts[3], colors[3]}});
  s << "</svg>\n";
  return s.str();
}

}  // namespace hipstudio::captures
