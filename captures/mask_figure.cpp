// Mask figures for papers: the picture of mask_png.cpp with a title, the parameters, tick labels
// and a legend, laid out once by viz::layout_mask_figure and drawn as PNG (viz::Raster) or SVG.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "captures/mask_png.h"

#include "captures/layer_kinds.h"
#include "captures/svg_plots.h"
#include "kernels/methods/selection_method.h"
#include "viz/raster.h"

namespace hipstudio::captures {
namespace {

std::string num(double v, const char* f = "%.3f") {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Pooled colours of the whole picture at (height, width) texels.
std::vector<uint32_t> pooled_rgba(const MaskExport& m, int width, int height) {
  std::vector<uint32_t> rgba;
  viz::colorize_mask(viz::pool_mask_flags(m.picture, viz::PoolRect{0, m.picture.tq, 0, m.picture.tk, width, height}), m.palette, rgba);
  return rgba;
}

}  // namespace

viz::MaskFigureText mask_figure_text(const MaskExport& mask, const PairedAnalysis& a, int64_t layer, int64_t head,
                                     const std::string& run) {
  viz::MaskFigureText t;
  const hip::HipParams& p = a.options.hip.hip;
  const LayerKinds kinds = layer_kinds(a);
  const bool dense = !kinds.hip(layer);
  // The side's method names the mask (HiP's, or the registry method the side ran). A HiP layer's
  // title is plain; another kind names itself (the subtitle gives l_d of how many).
  const hip::methods::MethodChoice& method = a.options.hip.method;
  const std::string who = method.is_hip() ? "HiP" : hip::methods::find_selection_method(method.name).title;
  t.title = who + " mask, layer " + std::to_string(layer) + ", head " + std::to_string(head) +
            (dense ? " (" + kinds.short_text(layer) + " layer: what " + who + " would pick)" : "");
  std::ostringstream s;
  if (!run.empty()) s << run << "; ";
  s << "k " << p.k << ", b_q " << p.b_q << ", b_k " << p.b_k << ", b_sq " << p.b_sq << ", b_sk " << p.b_sk << ", sink " << p.sink
    << ", window " << p.window << ", repr " << num(p.rho, "%.2g") << ", " << kinds.dense_layers_text() << "; T = "
    << mask.picture.tk << " tokens, Kb = " << (p.b_k > 0 ? p.k / p.b_k : 0);
  // The head's recall as the views layer computed it (the numbers `analyze` and the GUI show).
  if (layer >= 0 && layer < static_cast<int64_t>(a.layers.size()) && head >= 0 &&
      head < static_cast<int64_t>(a.layers[static_cast<size_t>(layer)].heads.size()) && mask.palette.show_oracle) {
    const HeadQuality& q = a.layers[static_cast<size_t>(layer)].heads[static_cast<size_t>(head)];
    s << "; recall vs oracle " << num(q.recall) << " (random " << num(q.random_recall) << ")";
  }
  t.subtitle = s.str();
  const viz::MaskPalette& c = mask.palette;
  if (c.show_oracle) {
    t.legend = {{"hit", c.hit}, {"false pick", c.false_pick}, {"miss", c.miss}};
  } else {
    t.legend = {{who + " selected", c.selected}};
  }
  if (c.show_random) t.legend.push_back({"random", c.random});
  if (c.show_sink_dense) {
    t.legend.push_back({"sink", c.sink});
    t.legend.push_back({"dense tail", c.dense});
  }
  if (dense) {
    t.legend.push_back({"dense layer (frame): " + kinds.text(layer), c.dense_layer});
    t.frame = c.dense_layer;
  }
  t.legend.push_back({"not attended", c.empty});
  t.legend.push_back({"future", c.future});
  return t;
}

RgbImage render_mask_figure(const MaskExport& mask, const viz::MaskFigureText& text, int64_t side, const viz::FigureStyle& style) {
  if (side < static_cast<int64_t>(viz::kMaskFigureMinSide) || !viz::Raster::has_text()) return render_mask(mask, side);
  if (side > (1 << 16)) return render_mask(mask, side);  // throws with the limit
  // The SVG's type and layout (the same text widths: the font the pixels are set in).
  const viz::FigureType type = viz::mask_figure_type(static_cast<double>(side));
  const auto tw = [&type](const std::string& s) { return viz::figure_text_width(s, type.font); };
  const viz::MaskFigureLayout f =
      viz::layout_mask_figure(text, mask.picture.tq, mask.picture.tk, static_cast<double>(side), type.line_height, tw);
  viz::Raster r(static_cast<int>(f.width), static_cast<int>(f.height), style.background);
  const int iw = static_cast<int>(f.img_w), ih = static_cast<int>(f.img_h);
  const int pw = static_cast<int>(std::min<int64_t>(iw, mask.picture.tk)), ph = static_cast<int>(std::min<int64_t>(ih, mask.picture.tq));
  r.blit(pooled_rgba(mask, pw, ph), pw, ph, static_cast<int>(f.img_x), static_cast<int>(f.img_y), iw, ih);
  const int fw = text.frame ? 3 : 1;
  r.frame(static_cast<int>(f.img_x) - fw, static_cast<int>(f.img_y) - fw, static_cast<int>(f.img_x) + iw + fw,
          static_cast<int>(f.img_y) + ih + fw, text.frame ? text.frame : style.axis, fw);
  // Ticks one SVG unit wide (1 px in the SVG's nominal 720 px).
  const int stroke = std::max(1, static_cast<int>(std::lround(static_cast<double>(side) / 720)));
  for (const viz::FigureLine& l : f.ticks)
    r.fill(static_cast<int>(std::min(l.x0, l.x1)), static_cast<int>(std::min(l.y0, l.y1)),
           static_cast<int>(std::max(l.x0, l.x1)) + stroke, static_cast<int>(std::max(l.y0, l.y1)) + stroke, style.axis);
  for (const viz::FigureSwatch& s : f.swatches) {
    r.fill(static_cast<int>(s.x), static_cast<int>(s.y), static_cast<int>(s.x + s.size), static_cast<int>(s.y + s.size), s.color);
    r.frame(static_cast<int>(s.x), static_cast<int>(s.y), static_cast<int>(s.x + s.size), static_cast<int>(s.y + s.size), style.grid);
  }
  for (const viz::FigureLabel& l : f.labels) {
    const uint32_t color = l.dim ? style.text_dim : style.text;
    const double px = l.title ? type.font * 1.15 : type.font;
    const double w = viz::Raster::text_width(l.text, px, l.title);
    if (l.up) {
      r.text_up(l.x + type.font, l.y + w / 2, l.text, color, px, l.title);
    } else {
      r.text(l.align < 0 ? l.x : l.align == 0 ? l.x - w / 2 : l.x - w, l.y + type.font, l.text, color, px, l.title);
    }
  }
  RgbImage im;
  im.width = r.width(), im.height = r.height();
  im.rgb.resize(static_cast<size_t>(im.width * im.height * 3));
  for (size_t i = 0; i < r.rgba().size(); ++i) {
    const uint32_t c = r.rgba()[i];
    im.rgb[i * 3] = c & 0xff, im.rgb[i * 3 + 1] = (c >> 8) & 0xff, im.rgb[i * 3 + 2] = (c >> 16) & 0xff;
  }
  return im;
}

std::string svg_mask_figure(const MaskExport& mask, const viz::MaskFigureText& text, const viz::FigureStyle& style, double side,
                            int64_t max_cells) {
  const viz::FigureType type = viz::mask_figure_type(side);
  const double font = type.font;
  const auto tw = [font](const std::string& s) { return viz::figure_text_width(s, font); };
  const viz::MaskFigureLayout f =
      viz::layout_mask_figure(text, mask.picture.tq, mask.picture.tk, std::max(side, viz::kMaskFigureMinSide), type.line_height, tw);
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f.width << "\" height=\"" << f.height << "\" viewBox=\"0 0 " << f.width << " "
    << f.height << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"" << num(font, "%.1f") << "\">\n<title>"
    << xml_escape(text.title) << "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"" << viz::css_color(style.background) << "\"/>\n";
  // The picture: pooled cells, one path of unit rectangles per colour (runs along a row merged),
  // scaled into the image rect, so it stays sharp at any zoom.
  const int pw = static_cast<int>(std::clamp<int64_t>(mask.picture.tk, 1, max_cells));
  const int ph = static_cast<int>(std::clamp<int64_t>(mask.picture.tq, 1, max_cells));
  const std::vector<uint32_t> rgba = pooled_rgba(mask, pw, ph);
  std::map<uint32_t, std::string> paths;
  for (int y = 0; y < ph; ++y)
    for (int x = 0; x < pw;) {
      const uint32_t c = rgba[static_cast<size_t>(y) * static_cast<size_t>(pw) + static_cast<size_t>(x)];
      int e = x + 1;
      while (e < pw && rgba[static_cast<size_t>(y) * static_cast<size_t>(pw) + static_cast<size_t>(e)] == c) ++e;
      paths[c] += "M" + std::to_string(x) + " " + std::to_string(y) + "h" + std::to_string(e - x) + "v1h-" + std::to_string(e - x) + "z";
      x = e;
    }
  s << "<g class=\"mask\" shape-rendering=\"crispEdges\" transform=\"translate(" << num(f.img_x, "%.2f") << " " << num(f.img_y, "%.2f")
    << ") scale(" << num(f.img_w / pw, "%.6g") << " " << num(f.img_h / ph, "%.6g") << ")\">\n";
  for (const auto& [c, d] : paths) s << "<path fill=\"" << viz::css_color(c) << "\" d=\"" << d << "\"/>\n";
  s << "</g>\n<rect x=\"" << num(f.img_x, "%.2f") << "\" y=\"" << num(f.img_y, "%.2f") << "\" width=\"" << num(f.img_w, "%.2f")
    << "\" height=\"" << num(f.img_h, "%.2f") << "\" fill=\"none\" stroke=\"" << viz::css_color(text.frame ? text.frame : style.axis) << "\" stroke-width=\""
    << (text.frame ? 3 : 1) << "\"/>\n<g stroke=\""
    << viz::css_color(style.axis) << "\">\n";
  for (const viz::FigureLine& l : f.ticks)
    s << "<line x1=\"" << num(l.x0, "%.2f") << "\" y1=\"" << num(l.y0, "%.2f") << "\" x2=\"" << num(l.x1, "%.2f") << "\" y2=\""
      << num(l.y1, "%.2f") << "\"/>\n";
  s << "</g>\n<g class=\"legend\">\n";
  for (const viz::FigureSwatch& w : f.swatches)
    s << "<rect x=\"" << num(w.x, "%.2f") << "\" y=\"" << num(w.y, "%.2f") << "\" width=\"" << num(w.size, "%.2f") << "\" height=\""
      << num(w.size, "%.2f") << "\" fill=\"" << viz::css_color(w.color) << "\" stroke=\"" << viz::css_color(style.grid) << "\"/>\n";
  s << "</g>\n";
  for (const viz::FigureLabel& l : f.labels)
    s << "<text x=\"" << num(l.up ? l.x + font : l.x, "%.2f") << "\" y=\"" << num(l.up ? l.y : l.y + font, "%.2f") << "\" text-anchor=\""
      << (l.up || l.align == 0 ? "middle" : l.align < 0 ? "start" : "end") << "\""
      << (l.up ? " transform=\"rotate(-90 " + num(l.x + font, "%.2f") + " " + num(l.y, "%.2f") + ")\"" : "") << " fill=\"" << viz::css_color(l.dim ? style.text_dim : style.text)
      << "\"" << (l.title ? " font-weight=\"bold\" font-size=\"" + num(font * 1.15, "%.1f") + "\"" : "") << ">" << xml_escape(l.text)
      << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace hipstudio::captures
