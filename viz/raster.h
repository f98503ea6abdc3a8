#pragma once
// A small RGBA canvas for figures rendered offscreen (exported PNGs): filled rectangles, scaled
// image blits and text. Text uses stb_easy_font (public domain, a bitmap font made of quads), so a
// figure needs no font file and no GPU; a machine without the header (libstb-dev) gets figures
// without text (has_text() says so).
#include <cstdint>
#include <string>
#include <vector>

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
  // Text with its top-left corner at (x, y), glyphs scaled by the integer `scale` (1: ~7 px capitals).
  void text(int x, int y, const std::string& text, uint32_t color, int scale);

  static bool has_text();
  static int text_width(const std::string& text, int scale);
  static int line_height(int scale);  // advance between lines of text at `scale`

 private:
  int width_, height_;
  std::vector<uint32_t> rgba_;
};

}  // namespace hipstudio::viz
