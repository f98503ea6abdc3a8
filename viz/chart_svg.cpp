#include "viz/chart_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "viz/plot_data.h"

namespace hipstudio::viz {
namespace {

// kTop leaves room for the title and two lines of context; a plot is kPlotW wide, plots kGap apart,
// the legend column kRight wide.
constexpr double kH = 420, kLeft = 72, kRight = 210, kTop = 66, kBottom = 56, kPlotW = 438, kGap = 96;  // px

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

struct Box {
  double left, top, right, bottom;
};

struct Frame {
  ChartRange r;
  Box box;
  double sx(double x) const { return box.left + (x - r.x0) / (r.x1 - r.x0) * (box.right - box.left); }
  double sy(double y) const { return box.bottom - (y - r.y0) / (r.y1 - r.y0) * (box.bottom - box.top); }
};

class Writer {
 public:
  Writer(const FigureStyle& style) : st_(style) {}
  std::string col(int index, uint32_t fixed = 0) const { return css_color(chart_color(st_, index, fixed)); }
  std::string c(uint32_t packed) const { return css_color(packed); }

  void open(const std::string& title, const std::string& context, double width) {
    s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << kH << "\" viewBox=\"0 0 " << width << " " << kH
      << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\" fill=\"" << c(st_.text) << "\">\n"
      << "<title>" << xml_escape(title) << "</title>\n<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"" << c(st_.background)
      << "\"/>\n<text class=\"title\" x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">"
      << xml_escape(title) << "</text>\n";
    std::vector<std::string> lines = wrap(context, static_cast<size_t>(width / 6.2));
    if (lines.size() > 2) lines.resize(2);
    for (size_t i = 0; i < lines.size(); ++i)
      s << "<text class=\"context\" x=\"" << width / 2 << "\" y=\"" << 40 + 14 * static_cast<double>(i)
        << "\" text-anchor=\"middle\" font-size=\"11\" fill=\"" << c(st_.text_dim) << "\">" << xml_escape(lines[i]) << "</text>\n";
  }

  // Axes, ticks, grid and labels; category labels at integer x where the axis has them.
  void axes(const Frame& f, const ChartPlot& p) {
    const Box& b = f.box;
    s << "<g class=\"axes\" stroke=\"" << c(st_.axis) << "\" fill=\"none\">\n<line x1=\"" << px(b.left) << "\" y1=\"" << px(b.bottom) << "\" x2=\""
      << px(b.right) << "\" y2=\"" << px(b.bottom) << "\"/>\n<line x1=\"" << px(b.left) << "\" y1=\"" << px(b.top) << "\" x2=\"" << px(b.left)
      << "\" y2=\"" << px(b.bottom) << "\"/>\n</g>\n<g class=\"ticks\" font-size=\"11\">\n";
    for (double v : nice_ticks(f.r.y0, f.r.y1, 4)) {
      const double y = f.sy(v);
      s << "<line x1=\"" << px(b.left - 4) << "\" y1=\"" << px(y) << "\" x2=\"" << px(b.right) << "\" y2=\"" << px(y) << "\" stroke=\""
        << c(st_.grid) << "\"/><text class=\"y-tick\" x=\"" << px(b.left - 7) << "\" y=\"" << px(y + 4) << "\" text-anchor=\"end\">"
        << tick_label(v) << "</text>\n";
    }
    std::vector<std::pair<double, std::string>> xt;
    if (!p.x.categories.empty()) {
      for (size_t i = 0; i < p.x.categories.size(); ++i) xt.emplace_back(static_cast<double>(i), p.x.categories[i]);
    } else if (p.x.log2) {
      for (double v : log_ticks(std::exp2(f.r.x0), std::exp2(f.r.x1))) xt.emplace_back(std::log2(v), tick_label(v));
    } else {
      // One tick per five font heights along x, as the screen's plots.
      const int target = std::max(2, static_cast<int>((b.right - b.left) / (12 * 5)));
      for (double v : nice_ticks(f.r.x0, f.r.x1, target)) xt.emplace_back(v, tick_label(v));
    }
    for (const auto& [v, label] : xt) {
      const double x = f.sx(v);
      s << "<line x1=\"" << px(x) << "\" y1=\"" << px(b.bottom) << "\" x2=\"" << px(x) << "\" y2=\"" << px(b.bottom + 4) << "\" stroke=\""
        << c(st_.axis) << "\"/><text class=\"x-tick\" x=\"" << px(x) << "\" y=\"" << px(b.bottom + 17) << "\" text-anchor=\"middle\">"
        << xml_escape(label) << "</text>\n";
    }
    const double ly = (b.top + b.bottom) / 2, lx = b.left - 56;
    s << "</g>\n<text class=\"x-label\" x=\"" << px((b.left + b.right) / 2) << "\" y=\"" << px(b.bottom + 42) << "\" text-anchor=\"middle\">"
      << xml_escape(p.x.label) << "</text>\n<text class=\"y-label\" x=\"" << px(lx) << "\" y=\"" << px(ly)
      << "\" text-anchor=\"middle\" transform=\"rotate(-90 " << px(lx) << " " << px(ly) << ")\">" << xml_escape(p.y.label) << "</text>\n";
  }

  void series(const Frame& f, const ChartPlot& p) {
    auto tx = [&](double x) { return p.x.log2 ? std::log2(x) : x; };
    for (const ChartSeries& se : p.series) {
      const std::string color = col(se.color, se.fixed_color);
      const std::string cls = se.svg_class.empty() ? "" : " " + se.svg_class;
      if (se.mark == ChartMark::Bars) {
        s << "<g class=\"bars" << cls << "\" fill=\"" << color << "\"" << (se.opacity < 1 ? " fill-opacity=\"" + num(se.opacity) + "\"" : "") << ">\n";
        for (size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
          if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) continue;
          const double base = i < se.base.size() ? se.base[i] : 0.0;
          const double xa = f.sx(tx(se.x[i] - se.bar_width / 2)), xb = f.sx(tx(se.x[i] + se.bar_width / 2));
          const double ya = f.sy(std::max(base, base + se.y[i])), yb = f.sy(std::min(base, base + se.y[i]));
          s << "<rect class=\"bar\" x=\"" << px(xa) << "\" y=\"" << px(ya) << "\" width=\"" << px(std::max(0.5, xb - xa - 0.5)) << "\" height=\""
            << px(yb - ya) << "\"" << (i < se.tips.size() ? "><title>" + xml_escape(se.tips[i]) + "</title></rect>\n" : "/>\n");
        }
        s << "</g>\n";
        continue;
      }
      // A ring for a dashed series' markers, so that a solid series' dots under them still show.
      const bool points = se.mark == ChartMark::Points;
      const std::string r = points ? num(se.width) : se.dashed ? "2.2" : "3";
      const std::string paint = se.dashed && !points ? "fill=\"" + c(st_.background) + "\" stroke=\"" + color + "\" stroke-width=\"1.4\""
                                                     : "fill=\"" + color + "\"";
      std::vector<std::string> lines(1);
      std::string marks;
      for (size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
        if (!std::isfinite(tx(se.x[i])) || !std::isfinite(se.y[i])) {
          if (!se.bridge_gaps && !lines.back().empty()) lines.emplace_back();
          continue;
        }
        const std::string at = px(f.sx(tx(se.x[i]))) + "," + px(f.sy(se.y[i]));
        lines.back() += at + " ";
        if (points || se.markers)
          marks += "<circle cx=\"" + px(f.sx(tx(se.x[i]))) + "\" cy=\"" + px(f.sy(se.y[i])) + "\" r=\"" + r + "\" " + paint + "/>";
      }
      s << "<g class=\"series\">";
      if (!points)
        for (const std::string& l : lines)
          if (!l.empty())
            s << "<polyline" << (se.svg_class.empty() ? "" : " class=\"" + se.svg_class + "\"") << " fill=\"none\" stroke=\"" << color << "\" stroke-width=\"" << num(se.width) << "\""
              << (se.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"" << l << "\"/>";
      s << marks << "</g>\n";
    }
    for (const ChartText& t : p.texts)
      s << "<text class=\"label\" x=\"" << px(f.sx(tx(t.x))) << "\" y=\"" << px(f.sy(t.y) - 4) << "\" text-anchor=\"middle\" font-size=\"11\">"
        << xml_escape(t.text) << "</text>\n";
  }

  // The entries top to bottom right of the last plot, whose right edge is `right`.
  void legend(const std::vector<ChartLegendEntry>& items, double right) {
    s << "<g class=\"legend\">\n";
    for (size_t i = 0; i < items.size(); ++i) {
      const ChartLegendEntry& e = items[i];
      const double y = kTop + 8 + 18 * static_cast<double>(i);
      const std::string color = col(e.color, e.fixed_color);
      if (e.note) {
        // A text line: no sample.
      } else if (e.mark == ChartMark::Bars) {
        s << "<rect x=\"" << px(right + 12) << "\" y=\"" << px(y - 9) << "\" width=\"12\" height=\"10\" fill=\"" << color << "\"/>";
      } else if (e.mark == ChartMark::Points) {
        s << "<circle cx=\"" << px(right + 18) << "\" cy=\"" << px(y - 4) << "\" r=\"3\" fill=\"" << color << "\"/>";
      } else {
        s << "<line x1=\"" << px(right + 10) << "\" y1=\"" << px(y - 4) << "\" x2=\"" << px(right + 26) << "\" y2=\"" << px(y - 4)
          << "\" stroke=\"" << color << "\" stroke-width=\"2\"" << (e.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>";
        if (e.markers)
          s << "<circle cx=\"" << px(right + 18) << "\" cy=\"" << px(y - 4) << "\" r=\"" << (e.dashed ? "2.2" : "3") << "\" "
            << (e.dashed ? "fill=\"" + c(st_.background) + "\" stroke=\"" + color + "\" stroke-width=\"1.4\"" : "fill=\"" + color + "\"") << "/>";
      }
      s << "<text x=\"" << px(right + 30) << "\" y=\"" << px(y) << "\">" << xml_escape(e.name) << "</text>\n";
    }
    s << "</g>\n";
  }

  std::ostringstream s;

 private:
  static std::vector<std::string> wrap(const std::string& text, size_t chars) {
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
  const FigureStyle& st_;
};

}  // namespace

uint32_t chart_color(const FigureStyle& style, int index, uint32_t fixed_color) {
  if (fixed_color) return fixed_color;
  return index < 0 ? style.text : style.series_color(static_cast<size_t>(index));
}

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

std::string svg_chart(const Chart& chart, const FigureStyle& style, const std::string& context) {
  const size_t n = std::max<size_t>(1, chart.plots.size());
  const double width = kLeft + static_cast<double>(n) * kPlotW + static_cast<double>(n - 1) * kGap + kRight;
  Writer w(style);
  w.open(chart.title, context, width);
  double right = kLeft + kPlotW;
  for (size_t i = 0; i < chart.plots.size(); ++i) {
    const double left = kLeft + static_cast<double>(i) * (kPlotW + kGap);
    right = left + kPlotW;
    const Frame f{chart_range(chart.plots[i]), Box{left, kTop, right, kH - kBottom}};
    w.axes(f, chart.plots[i]);
    w.series(f, chart.plots[i]);
  }
  w.legend(chart_legend(chart), right);
  w.s << "</svg>\n";
  return w.s.str();
}

}  // namespace hipstudio::viz
