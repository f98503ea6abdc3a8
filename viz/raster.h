#pragma once
// A small RGBA canvas for figures rendered offscreen (exported PNGs): filled rectangles, scaled
// image blits and text. Text is set in the screen's vector font (viz/vector_font.h), antialiased;
// a machine without the font file gets figures without text (has_text() says so).
#include <cstdint>
#include <string>
#include <vector>

#include "viz/vector_font.h"

namespace hipstudio::viz {

class Raster {
 public:
  Raster(int width, int height, uint32_t background);
  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint32_t>& rgba() const { return rgba_; }  // (height, width), packed as pack_rgba8
  uint32_t at(int x, int y) const { return rgba_[static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)]; }

  // [x0, x1) x [y0, y1), clipped to the canvas.
  void fill(int x0, int y0, int x1, int y1, uint32_t color);
  // A one-`thickness` frame just inside [x0, x1) x [y0, y1).
  void frame(int x0, int y0, int x1, int y1, uint32_t color, int thickness = 1);
  // `src` (sh, sw) scaled nearest-neighbour into [x, x + dw) x [y, y + dh).
  void blit(const std::vector<uint32_t>& src, int sw, int sh, int x, int y, int dw, int dh);
  // `text` at em size `px` (SVG's font-size) with its baseline starting at (x, baseline), each
  // pixel blended towards `color` by the glyphs' coverage.
  void text(double x, double baseline, const std::string& text, uint32_t color, double px, bool bold = false);
  // The same turned a quarter turn anticlockwise (a y-axis label, read bottom to top): the
  // baseline runs up from (x, baseline), as SVG's rotate(-90 x baseline).
  void text_up(double x, double baseline, const std::string& text, uint32_t color, double px, bool bold = false);

  static bool has_text();
  static double text_width(const std::string& text, double px, bool bold = false);  // the pen's advance

 private:
  void blend(int x, int y, uint32_t color, uint8_t alpha);
  void draw(double x, double baseline, const TextCoverage& c, uint32_t color, bool up);
  int width_, height_;
  std::vector<uint32_t> rgba_;
};

}  // namespace hipstudio::viz
