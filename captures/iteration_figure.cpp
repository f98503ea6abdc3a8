// The iteration figure (the paper's fig:masking_visualization) as SVG: one row per step of HiP's
// search for one query block, key blocks across; alive nodes solid, blocks pruned earlier faded
// (labelled with the iteration that pruned them), the oracle's top-k blocks marked under the rows,
// and how much of the oracle each step still covers.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "captures/svg_plots.h"
#include "viz/plot_data.h"

namespace hipstudio::captures {
namespace {

std::string f2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

}  // namespace

std::string svg_iterations(const BlockTraceView& view, const std::string& title, const std::string& subtitle,
                           const viz::FigureStyle& style) {
  const hip::MaskTrace& t = view.trace;
  const std::vector<int32_t>& oracle_blocks = view.oracle_blocks;
  const std::vector<viz::TraceStep> steps = viz::trace_steps(t, oracle_blocks);
  const int64_t lo = t.lo, hi = std::max(t.hi, t.lo + 1), n = hi - lo;
  const std::vector<int> left_at = viz::pruned_at_step(steps, lo, hi);
  constexpr double kWidth = 760, kLeft = 64, kRight = 150, kTop = 64, kRow = 22, kGap = 4;
  const double rows = static_cast<double>(steps.size());
  const double oracle_y = kTop + rows * (kRow + kGap) + 4;
  const double axis_y = oracle_y + 14;
  const double height = axis_y + 74;
  const double w = kWidth - kLeft - kRight;
  auto x_of = [&](double block) { return kLeft + (block - static_cast<double>(lo)) / static_cast<double>(n) * w; };
  const std::string kept = viz::css_color(style.mask.hit), pruned = viz::css_color(style.mask.empty),
                    miss = viz::css_color(style.mask.miss), text = viz::css_color(style.text), dim = viz::css_color(style.text_dim);
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << f2(height) << "\" viewBox=\"0 0 " << kWidth << " "
    << f2(height) << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n<title>" << xml_escape(title)
    << "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"" << viz::css_color(style.background) << "\"/>\n<text x=\"" << kWidth / 2
    << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\" fill=\"" << text << "\">" << xml_escape(title)
    << "</text>\n<text x=\"" << kWidth / 2 << "\" y=\"42\" text-anchor=\"middle\" fill=\"" << dim << "\">" << xml_escape(subtitle) << "</text>\n";
  for (size_t r = 0; r < steps.size(); ++r) {
    const double y = kTop + static_cast<double>(r) * (kRow + kGap);
    s << "<text class=\"step\" x=\"" << kLeft - 6 << "\" y=\"" << f2(y + kRow * 0.7) << "\" text-anchor=\"end\" fill=\"" << text << "\">"
      << (r == 0 ? "init" : "iter " + std::to_string(r)) << "</text>\n<g class=\"row\">";
    // Runs of equal state along the row: alive, pruned at step k (faded, labelled), or never held.
    for (int64_t b = 0; b < n;) {
      const int state = left_at[static_cast<size_t>(b)] > static_cast<int>(r) ? -1 : left_at[static_cast<size_t>(b)];
      int64_t e = b + 1;
      while (e < n && (left_at[static_cast<size_t>(e)] > static_cast<int>(r) ? -1 : left_at[static_cast<size_t>(e)]) == state) ++e;
      const double xa = x_of(static_cast<double>(lo + b)), xb = x_of(static_cast<double>(lo + e));
      if (state == -1) {
        s << "<rect class=\"alive\" x=\"" << f2(xa) << "\" y=\"" << f2(y) << "\" width=\"" << f2(std::max(0.5, xb - xa)) << "\" height=\"" << kRow
          << "\" fill=\"" << kept << "\"/>";
      } else if (state > 0) {
        s << "<rect class=\"pruned\" x=\"" << f2(xa) << "\" y=\"" << f2(y) << "\" width=\"" << f2(std::max(0.5, xb - xa)) << "\" height=\""
          << kRow << "\" fill=\"" << kept << "\" fill-opacity=\"" << f2(0.12 + 0.5 * state / std::max(1.0, rows)) << "\"><title>pruned by iteration "
          << state << "</title></rect>";
        if (xb - xa > 16)
          s << "<text x=\"" << f2((xa + xb) / 2) << "\" y=\"" << f2(y + kRow * 0.7) << "\" text-anchor=\"middle\" font-size=\"9\" fill=\"" << dim
            << "\">" << state << "</text>";
      } else {
        s << "<rect class=\"unheld\" x=\"" << f2(xa) << "\" y=\"" << f2(y) << "\" width=\"" << f2(std::max(0.5, xb - xa)) << "\" height=\""
          << kRow << "\" fill=\"" << pruned << "\"/>";
      }
      b = e;
    }
    s << "</g>\n<text class=\"coverage\" x=\"" << kWidth - kRight + 8 << "\" y=\"" << f2(y + kRow * 0.7) << "\" fill=\"" << text << "\">"
      << f2(steps[r].oracle_coverage * 100) << "% of oracle</text>\n";
  }
  s << "<g class=\"axes\" stroke=\"" << text << "\"><line x1=\"" << kLeft << "\" y1=\"" << f2(axis_y) << "\" x2=\"" << kLeft + w << "\" y2=\""
    << f2(axis_y) << "\"/></g>\n<text class=\"y-label\" x=\"14\" y=\"" << f2(kTop + rows * (kRow + kGap) / 2) << "\" text-anchor=\"middle\" fill=\""
    << text << "\" transform=\"rotate(-90 14 " << f2(kTop + rows * (kRow + kGap) / 2) << ")\">search step</text>\n";
  s << "<g class=\"oracle\" fill=\"" << miss << "\">";
  for (int32_t b : oracle_blocks)
    s << "<rect x=\"" << f2(x_of(b)) << "\" y=\"" << f2(oracle_y) << "\" width=\"" << f2(std::max(1.0, x_of(b + 1) - x_of(b))) << "\" height=\"6\"/>";
  s << "</g>\n<g class=\"ticks\" fill=\"" << text << "\">\n";
  for (double v : viz::nice_ticks(static_cast<double>(lo), static_cast<double>(hi), 8))
    s << "<line x1=\"" << f2(x_of(v)) << "\" y1=\"" << f2(axis_y) << "\" x2=\"" << f2(x_of(v)) << "\" y2=\"" << f2(axis_y + 4) << "\" stroke=\""
      << text << "\"/><text class=\"x-tick\" x=\"" << f2(x_of(v)) << "\" y=\"" << f2(axis_y + 17) << "\" text-anchor=\"middle\">"
      << viz::tick_label(v) << "</text>\n";
  s << "</g>\n<text class=\"x-label\" x=\"" << f2(kLeft + w / 2) << "\" y=\"" << f2(axis_y + 36) << "\" text-anchor=\"middle\" fill=\"" << text
    << "\">key block</text>\n<g class=\"legend\" fill=\"" << text << "\">";
  const double ly = axis_y + 54;
  s << "<rect x=\"" << kLeft << "\" y=\"" << f2(ly - 9) << "\" width=\"12\" height=\"10\" fill=\"" << kept << "\"/><text x=\"" << kLeft + 16
    << "\" y=\"" << f2(ly) << "\">alive node</text>"
    << "<rect x=\"" << kLeft + 110 << "\" y=\"" << f2(ly - 9) << "\" width=\"12\" height=\"10\" fill=\"" << kept << "\" fill-opacity=\"0.3\"/><text x=\""
    << kLeft + 126 << "\" y=\"" << f2(ly) << "\">pruned (number: by which iteration)</text>"
    << "<rect x=\"" << kLeft + 350 << "\" y=\"" << f2(ly - 9) << "\" width=\"12\" height=\"6\" fill=\"" << miss << "\"/><text x=\"" << kLeft + 366
    << "\" y=\"" << f2(ly) << "\">oracle top-k block</text></g>\n</svg>\n";
  return s.str();
}

}  // namespace hipstudio::captures
