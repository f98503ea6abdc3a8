#include "viz/figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "viz/plot_data.h"
#include "viz/vector_font.h"

namespace hipstudio::viz {

FigureStyle paper_style() {
  FigureStyle s;
  s.name = "paper";
  s.background = pack_rgba8(255, 255, 255);
  s.text = pack_rgba8(20, 20, 20);
  s.text_dim = pack_rgba8(90, 90, 90);
  s.axis = pack_rgba8(60, 60, 60);
  s.grid = pack_rgba8(220, 220, 220);
  // Tableau-like: dark enough on white.
  s.series = {pack_rgba8(0x1f, 0x4e, 0x79), pack_rgba8(0xe1, 0x57, 0x59), pack_rgba8(0xf2, 0x8e, 0x2b), pack_rgba8(0x59, 0xa1, 0x4f),
              pack_rgba8(0x76, 0xb7, 0xb2), pack_rgba8(0xb0, 0x7a, 0xa1), pack_rgba8(0x9c, 0x75, 0x5f), pack_rgba8(0xed, 0xc9, 0x48)};
  s.mask = light_mask_palette();
  return s;
}

FigureStyle dark_style() {
  FigureStyle s;
  s.name = "dark";
  s.background = pack_rgba8(30, 32, 38);
  s.text = pack_rgba8(230, 230, 230);
  s.text_dim = pack_rgba8(160, 160, 165);
  s.axis = pack_rgba8(170, 170, 175);
  s.grid = pack_rgba8(70, 72, 80);
  // The same hues lightened, so that each reads on the dark background.
  s.series = {pack_rgba8(0x6f, 0xa8, 0xdc), pack_rgba8(0xff, 0x7b, 0x7d), pack_rgba8(0xff, 0xb0, 0x62), pack_rgba8(0x8f, 0xd1, 0x7f),
              pack_rgba8(0x9f, 0xe0, 0xda), pack_rgba8(0xd4, 0xa5, 0xc9), pack_rgba8(0xc9, 0xa4, 0x8a), pack_rgba8(0xf4, 0xdc, 0x7a)};
  s.mask = dark_mask_palette();
  return s;
}

FigureStyle figure_style(const std::string& name) {
  if (name == "paper") return paper_style();
  if (name == "dark") return dark_style();
  throw std::invalid_argument("unknown figure style '" + name + "' (paper or dark)");
}

std::string css_color(uint32_t c) {
  char b[8];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff);
  return b;
}

namespace {

// Greedy word wrap of `text` into lines no wider than `width`.
std::vector<std::string> wrap(const std::string& text, double width, const std::function<double(const std::string&)>& tw) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  while (in >> word) {
    const std::string next = line.empty() ? word : line + " " + word;
    if (!line.empty() && tw(next) > width) {
      lines.push_back(line);
      line = word;
    } else {
      line = next;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace

FigureType mask_figure_type(double side) {
  FigureType t;
  t.line_height = std::max(14.0, std::max(side, kMaskFigureMinSide) / 40);
  t.font = t.line_height * 0.72;
  return t;
}

double figure_text_width(const std::string& text, double font) {
  if (const VectorFont* f = VectorFont::sans()) return f->width(text, font);
  return 0.56 * font * static_cast<double>(text.size());
}

MaskFigureLayout layout_mask_figure(const MaskFigureText& text, int64_t tq, int64_t tk, double side, double lh,
                                    const std::function<double(const std::string&)>& tw) {
  MaskFigureLayout f;
  f.width = f.height = side;
  f.line_height = lh;
  if (side < kMaskFigureMinSide || tq <= 0 || tk <= 0) {
    f.img_w = tq >= tk ? side * static_cast<double>(tk) / static_cast<double>(std::max<int64_t>(tq, 1)) : side;
    f.img_h = tk >= tq ? side * static_cast<double>(tq) / static_cast<double>(std::max<int64_t>(tk, 1)) : side;
    return f;
  }
  const double pad = lh * 0.6, tick = lh * 0.3;
  double y = pad;
  f.labels.push_back({text.title, side / 2, y, 0, true, false});
  y += lh * 1.3;
  for (const std::string& l : wrap(text.subtitle, side - 2 * pad, tw)) {
    f.labels.push_back({l, side / 2, y, 0, false, true});
    y += lh;
  }
  y += lh * 0.4;
  const double axis_name_y = y;
  y += lh;  // axis names
  const double tick_label_y = y;
  y += lh + tick;  // key tick labels, then the ticks
  // Left column: the widest query tick label (ticks at about one per three lines of the tallest
  // picture the canvas could hold); right column: the legend.
  const std::vector<double> y_ticks = cell_ticks(0, static_cast<double>(tq - 1), std::max(2, static_cast<int>((side - y) / (lh * 3))));
  double label_w = tw(tick_label(static_cast<double>(tq - 1)));
  for (double t : y_ticks) label_w = std::max(label_w, tw(tick_label(t)));
  double legend_w = 0;
  for (const auto& [name, color] : text.legend) legend_w = std::max(legend_w, tw(name));
  // The query axis' name, turned, then the tick labels.
  const double left = pad + lh + label_w + tick + lh * 0.3;
  const double right = legend_w > 0 ? lh * 0.8 + lh + lh * 0.4 + legend_w + pad : pad;
  const double avail_w = side - left - right, avail_h = side - y - pad;
  const double scale = std::min(avail_w / static_cast<double>(tk), avail_h / static_cast<double>(tq));
  f.img_w = std::max(1.0, std::floor(scale * static_cast<double>(tk)));
  f.img_h = std::max(1.0, std::floor(scale * static_cast<double>(tq)));
  f.img_x = std::floor(left + (avail_w - f.img_w) / 2);
  f.img_y = std::floor(y);
  f.labels.push_back({"key token", f.img_x + f.img_w / 2, axis_name_y, 0, false, true});
  f.labels.push_back({"query token", pad, f.img_y + f.img_h / 2, 0, false, true, true});
  // Ticks at cell centres (as the mask view draws them), about one per five line heights.
  const int tx = std::max(2, static_cast<int>(f.img_w / (lh * 5))), ty = std::max(2, static_cast<int>(f.img_h / (lh * 3)));
  for (double t : cell_ticks(0, static_cast<double>(tk - 1), tx)) {
    const double x = f.img_x + (t + 0.5) * f.img_w / static_cast<double>(tk);
    f.ticks.push_back({x, f.img_y - tick, x, f.img_y});
    f.labels.push_back({tick_label(t), x, tick_label_y, 0, false, false});
  }
  for (double t : cell_ticks(0, static_cast<double>(tq - 1), ty)) {
    const double yy = f.img_y + (t + 0.5) * f.img_h / static_cast<double>(tq);
    f.ticks.push_back({f.img_x - tick, yy, f.img_x, yy});
    f.labels.push_back({tick_label(t), f.img_x - tick - lh * 0.3, yy - lh * 0.35, 1, false, false});
  }
  double ly = f.img_y;
  const double sx = f.img_x + f.img_w + lh * 0.8;
  for (const auto& [name, color] : text.legend) {
    f.swatches.push_back({sx, ly, lh * 0.8, color});
    f.labels.push_back({name, sx + lh * 1.2, ly + lh * 0.1, -1, false, false});
    ly += lh * 1.2;
  }
  return f;
}

}  // namespace hipstudio::viz
