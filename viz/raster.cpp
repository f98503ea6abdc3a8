#include "viz/raster.h"

#include <algorithm>
#include <cmath>

namespace hipstudio::viz {

Raster::Raster(int width, int height, uint32_t background)
    : width_(std::max(0, width)), height_(std::max(0, height)),
      rgba_(static_cast<size_t>(width_) * static_cast<size_t>(height_), background) {}

void Raster::fill(int x0, int y0, int x1, int y1, uint32_t color) {
  x0 = std::max(0, x0), y0 = std::max(0, y0), x1 = std::min(width_, x1), y1 = std::min(height_, y1);
  for (int y = y0; y < y1; ++y) std::fill_n(rgba_.begin() + static_cast<std::ptrdiff_t>(y) * width_ + x0, std::max(0, x1 - x0), color);
}

void Raster::frame(int x0, int y0, int x1, int y1, uint32_t color, int t) {
  fill(x0, y0, x1, y0 + t, color);
  fill(x0, y1 - t, x1, y1, color);
  fill(x0, y0, x0 + t, y1, color);
  fill(x1 - t, y0, x1, y1, color);
}

void Raster::blit(const std::vector<uint32_t>& src, int sw, int sh, int x, int y, int dw, int dh) {
  if (sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0) return;
  for (int r = std::max(0, -y); r < dh && y + r < height_; ++r) {
    const uint32_t* line = src.data() + static_cast<size_t>(static_cast<int64_t>(r) * sh / dh) * static_cast<size_t>(sw);
    for (int c = std::max(0, -x); c < dw && x + c < width_; ++c)
      rgba_[static_cast<size_t>(y + r) * static_cast<size_t>(width_) + static_cast<size_t>(x + c)] =
          line[static_cast<int64_t>(c) * sw / dw];
  }
}

bool Raster::has_text() { return VectorFont::sans() != nullptr; }

double Raster::text_width(const std::string& s, double px, bool bold) {
  const VectorFont* f = VectorFont::sans(bold);
  return f ? f->width(s, px) : 0.0;
}

void Raster::blend(int x, int y, uint32_t color, uint8_t alpha) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_ || alpha == 0) return;
  uint32_t& d = rgba_[static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)];
  uint32_t out = 0xff000000u;
  for (int shift = 0; shift < 24; shift += 8) {
    const uint32_t a = (d >> shift) & 0xffu, b = (color >> shift) & 0xffu;
    out |= ((a * (255u - alpha) + b * alpha + 127u) / 255u) << shift;
  }
  d = out;
}

void Raster::draw(double x, double baseline, const TextCoverage& c, uint32_t color, bool up) {
  // Whole-pixel origin: the glyphs' subpixel positions along the line are in the coverage already.
  const int ox = static_cast<int>(std::lround(x)), oy = static_cast<int>(std::lround(baseline));
  for (int v = 0; v < c.height; ++v)
    for (int u = 0; u < c.width; ++u) {
      const uint8_t a = c.alpha[static_cast<size_t>(v) * static_cast<size_t>(c.width) + static_cast<size_t>(u)];
      // Upright: (pen + u, baseline + v). Turned: the line's "right" is the canvas' up and its
      // "down" is the canvas' right.
      if (up) blend(ox + c.top + v, oy - (c.left + u) - 1, color, a);
      else blend(ox + c.left + u, oy + c.top + v, color, a);
    }
}

void Raster::text(double x, double baseline, const std::string& s, uint32_t color, double px, bool bold) {
  if (const VectorFont* f = VectorFont::sans(bold)) draw(x, baseline, f->rasterize(s, px), color, false);
}

void Raster::text_up(double x, double baseline, const std::string& s, uint32_t color, double px, bool bold) {
  if (const VectorFont* f = VectorFont::sans(bold)) draw(x, baseline, f->rasterize(s, px), color, true);
}

}  // namespace hipstudio::viz
