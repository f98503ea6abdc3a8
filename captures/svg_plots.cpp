#include "captures/svg_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace hipstudio::captures {
namespace {

constexpr double kW = 720, kH = 400, kLeft = 72, kRight = 210, kTop = 40, kBottom = 56;  // px
const char* kColors[] = {"#1f4e79", "#e15759", "#f28e2b", "#59a14f", "#76b7b2", "#b07aa1", "#9c755f", "#edc948"};

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

// "Nice" tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int target = 6) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3 ? 2 * mag : raw / mag < 7 ? 5 * mag : 10 * mag;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

struct Frame {
  double x0, x1, y0, y1;  // data range
  double sx(double x) const { return kLeft + (x - x0) / (x1 - x0) * (kW - kLeft - kRight); }
  double sy(double y) const { return kH - kBottom - (y - y0) / (y1 - y0) * (kH - kTop - kBottom); }
};

void widen(double& lo, double& hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi <= lo) {
    const double pad = lo == 0 ? 0.5 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
}

void open_svg(std::ostringstream& s, const std::string& title) {
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 " << kW << " " << kH
    << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
    << "<title>" << xml_escape(title) << "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kW / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(title)
    << "</text>\n";
}

// Axes, ticks, grid and labels. x_names: category labels at integer x instead of numeric ticks.
void axes(std::ostringstream& s, const Frame& f, const std::string& xl, const std::string& yl, bool log2_x,
          const std::vector<std::string>& x_names = {}) {
  s << "<g class=\"axes\" stroke=\"#333\" fill=\"none\">\n<line x1=\"" << px(kLeft) << "\" y1=\"" << px(kH - kBottom) << "\" x2=\""
    << px(kW - kRight) << "\" y2=\"" << px(kH - kBottom) << "\"/>\n<line x1=\"" << px(kLeft) << "\" y1=\"" << px(kTop) << "\" x2=\""
    << px(kLeft) << "\" y2=\"" << px(kH - kBottom) << "\"/>\n</g>\n<g class=\"ticks\" font-size=\"11\">\n";
  for (double v : ticks(f.y0, f.y1)) {
    const double y = f.sy(v);
    s << "<line x1=\"" << px(kLeft - 4) << "\" y1=\"" << px(y) << "\" x2=\"" << px(kW - kRight) << "\" y2=\"" << px(y)
      << "\" stroke=\"#ddd\"/><text x=\"" << px(kLeft - 7) << "\" y=\"" << px(y + 4) << "\" text-anchor=\"end\">" << num(v) << "</text>\n";
  }
  std::vector<std::pair<double, std::string>> xt;
  if (!x_names.empty()) {
    for (size_t i = 0; i < x_names.size(); ++i) xt.emplace_back(static_cast<double>(i), x_names[i]);
  } else if (log2_x) {
    for (double e = std::ceil(f.x0); e <= f.x1 + 1e-9; e += 1) xt.emplace_back(e, num(std::pow(2.0, e)));
  } else {
    for (double v : ticks(f.x0, f.x1)) xt.emplace_back(v, num(v));
  }
  for (const auto& [v, label] : xt) {
    const double x = f.sx(v);
    s << "<line x1=\"" << px(x) << "\" y1=\"" << px(kH - kBottom) << "\" x2=\"" << px(x) << "\" y2=\"" << px(kH - kBottom + 4)
      << "\" stroke=\"#333\"/><text x=\"" << px(x) << "\" y=\"" << px(kH - kBottom + 17) << "\" text-anchor=\"middle\">"
      << xml_escape(label) << "</text>\n";
  }
  s << "</g>\n<text class=\"x-label\" x=\"" << px((kLeft + kW - kRight) / 2) << "\" y=\"" << px(kH - 14) << "\" text-anchor=\"middle\">"
    << xml_escape(xl) << "</text>\n<text class=\"y-label\" x=\"16\" y=\"" << px((kTop + kH - kBottom) / 2)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << px((kTop + kH - kBottom) / 2) << ")\">" << xml_escape(yl) << "</text>\n";
}

void legend(std::ostringstream& s, const std::vector<std::pair<std::string, std::string>>& items) {
  s << "<g class=\"legend\">\n";
  for (size_t i = 0; i < items.size(); ++i) {
    const double y = kTop + 8 + 18 * static_cast<double>(i);
    s << "<rect x=\"" << px(kW - kRight + 12) << "\" y=\"" << px(y - 9) << "\" width=\"12\" height=\"10\" fill=\"" << items[i].second
      << "\"/><text x=\"" << px(kW - kRight + 30) << "\" y=\"" << px(y) << "\">" << xml_escape(items[i].first) << "</text>\n";
  }
  s << "</g>\n";
}

}  // namespace

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
                           const std::vector<PlotSeries>& series, bool log2_x, double y_lo, double y_hi) {
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
  Frame f{x0, x1, std::isfinite(y_lo) ? y0 : y0 - pad, std::isfinite(y_hi) ? y1 : y1 + pad};
  std::ostringstream s;
  open_svg(s, title);
  axes(s, f, xl, yl, log2_x);
  std::vector<std::pair<std::string, std::string>> items;
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& p = series[k];
    const std::string color = p.color.empty() ? kColors[k % 8] : p.color;
    items.emplace_back(p.name, color);
    // A non-finite point breaks the line (a step without accesses has no hit ratio).
    std::vector<std::string> lines(1);
    std::string marks;
    for (size_t i = 0; i < p.x.size() && i < p.y.size(); ++i) {
      if (!std::isfinite(tx(p.x[i])) || !std::isfinite(p.y[i])) {
        if (!lines.back().empty()) lines.emplace_back();
        continue;
      }
      lines.back() += px(f.sx(tx(p.x[i]))) + "," + px(f.sy(p.y[i])) + " ";
      if (p.markers)
        marks += "<circle cx=\"" + px(f.sx(tx(p.x[i]))) + "\" cy=\"" + px(f.sy(p.y[i])) + "\" r=\"2.5\" fill=\"" + color + "\"/>";
    }
    s << "<g class=\"series\">";
    for (const std::string& l : lines)
      if (!l.empty()) s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.6\" points=\"" << l << "\"/>";
    s << marks << "</g>\n";
  }
  legend(s, items);
  s << "</svg>\n";
  return s.str();
}

std::string svg_locality_histogram(const hip::DeltaStats& d, const std::string& title) {
  const int64_t bins = static_cast<int64_t>(d.counts.size());
  const double width = bins ? (d.hist_hi - d.hist_lo) / static_cast<double>(bins) : 1;
  int64_t peak = 1;
  for (int64_t c : d.counts) peak = std::max(peak, c);
  // The fitted normal scaled to counts: pairs * bin width * pdf.
  std::vector<double> nx, ny;
  double top = static_cast<double>(peak);
  if (d.stddev > 0)
    for (int i = 0; i <= 120; ++i) {
      const double x = d.hist_lo + (d.hist_hi - d.hist_lo) * i / 120.0, z = (x - d.mean) / d.stddev;
      nx.push_back(x);
      ny.push_back(static_cast<double>(d.pairs) * width * std::exp(-0.5 * z * z) / (d.stddev * std::sqrt(2 * M_PI)));
      top = std::max(top, ny.back());
    }
  double lo = d.hist_lo, hi = d.hist_hi;
  widen(lo, hi);
  Frame f{lo, hi, 0, top * 1.05};
  std::ostringstream s;
  open_svg(s, title);
  axes(s, f, "delta = s(j + " + std::to_string(d.delta) + ") - s(j)", "key pairs", false);
  s << "<g class=\"bars\" fill=\"#1f4e79\" fill-opacity=\"0.75\">\n";
  for (int64_t b = 0; b < bins; ++b) {
    const double xa = f.sx(d.hist_lo + width * b), xb = f.sx(d.hist_lo + width * (b + 1)), y = f.sy(static_cast<double>(d.counts[b]));
    s << "<rect x=\"" << px(xa) << "\" y=\"" << px(y) << "\" width=\"" << px(std::max(0.5, xb - xa - 0.5)) << "\" height=\""
      << px(f.sy(0) - y) << "\"/>\n";
  }
  s << "</g>\n";
  if (!nx.empty()) {
    s << "<polyline class=\"normal-fit\" fill=\"none\" stroke=\"#e15759\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < nx.size(); ++i) s << px(f.sx(nx[i])) << "," << px(f.sy(ny[i])) << " ";
    s << "\"/>\n";
  }
  legend(s, {{"observed", "#1f4e79"}, {"N(" + num(d.mean) + ", " + num(d.stddev) + "^2)", "#e15759"}, {"KL " + num(d.kl_to_normal), "white"}});
  s << "</svg>\n";
  return s.str();
}

std::string svg_locality_vs_delta(const std::vector<hip::ScoreLocality>& heads, const std::string& title) {
  std::vector<PlotSeries> series;
  for (size_t h = 0; h < heads.size(); ++h) {
    PlotSeries mean{"head " + std::to_string(heads[h].head) + " mean", {}, {}, kColors[(2 * h) % 8], true};
    PlotSeries sd{"head " + std::to_string(heads[h].head) + " std", {}, {}, kColors[(2 * h + 1) % 8], true};
    for (const hip::DeltaStats& d : heads[h].deltas) {
      mean.x.push_back(static_cast<double>(d.delta));
      mean.y.push_back(d.mean);
      sd.x.push_back(static_cast<double>(d.delta));
      sd.y.push_back(d.stddev);
    }
    series.push_back(mean);
    series.push_back(sd);
  }
  return svg_line_chart(title, "Delta (key distance)", "delta score: mean, std", series, true);
}

std::string svg_hit_ratio_per_step(const offload::OffloadResult& r) {
  std::vector<PlotSeries> series;
  const char* names[] = {"mask estimation", "sparse attention"};  // legend: name (bank slots)
  for (int c = 0; c < 2; ++c) {
    const offload::ContextStats& ctx = c == 0 ? r.mask : r.sparse;
    PlotSeries p{std::string(names[c]) + " (" + std::to_string(ctx.bank_tokens) + ")", {}, {}, kColors[c], true};
    for (size_t s = 0; s < ctx.per_step_total.size(); ++s) {
      const offload::BankCounts& b = ctx.per_step_total[s];
      p.x.push_back(static_cast<double>(s));
      p.y.push_back(b.accesses > 0 ? offload::hit_ratio(b) : NAN);  // no reads: no ratio (steps without a refresh)
    }
    series.push_back(p);
  }
  return svg_line_chart("KV offloading: hit ratio per decode step", "decode step", "hit ratio", series, false, 0.0, 1.0);
}

std::string svg_latency_bars(const PairedAnalysis& a) {
  const ComponentMs bars[4] = {a.dense.latency.prefill, a.hip.latency.prefill, a.dense.latency.decode_step, a.hip.latency.decode_step};
  const std::vector<std::string> names{"dense prefill", "HiP prefill", "dense decode", "HiP decode"};
  const char* parts[4] = {"mask estimation", "sparse attention", "dense attention", "other"};
  const char* colors[4] = {"#f28e2b", "#e15759", "#1f4e79", "#bab0ac"};
  double top = 0;
  for (const ComponentMs& b : bars) top = std::max(top, b.total());
  Frame f{-0.6, 3.6, 0, top > 0 ? top * 1.08 : 1};
  std::ostringstream s;
  open_svg(s, "Latency breakdown (ms; decode: mean per step)");
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
