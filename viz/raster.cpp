#include "viz/raster.h"

#include <algorithm>
#include <cmath>

#if __has_include(<stb/stb_easy_font.h>)
#define HIPSTUDIO_HAVE_EASY_FONT 1
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wcast-qual"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wfloat-conversion"
#endif
#include <stb/stb_easy_font.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
#define HIPSTUDIO_HAVE_EASY_FONT 0
#endif

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

bool Raster::has_text() { return HIPSTUDIO_HAVE_EASY_FONT != 0; }

#if HIPSTUDIO_HAVE_EASY_FONT
namespace {
// stb_easy_font wants a mutable string.
std::vector<char> c_text(const std::string& s) {
  std::vector<char> t(s.begin(), s.end());
  t.push_back('\0');
  return t;
}
}  // namespace

int Raster::text_width(const std::string& s, int scale) {
  std::vector<char> t = c_text(s);
  return stb_easy_font_width(t.data()) * std::max(1, scale);
}

int Raster::line_height(int scale) { return 12 * std::max(1, scale); }

void Raster::text(int x, int y, const std::string& s, uint32_t color, int scale) {
  scale = std::max(1, scale);
  std::vector<char> t = c_text(s);
  // 4 vertices of 16 bytes (x, y, z, rgba) per quad. stb_easy_font says ~270 bytes per character
  // on average, but "8" or "0" take more and a short buffer silently drops the last quads (an "80"
  // lost half its zero): room for 16 quads a character.
  std::vector<char> quads(s.size() * 16 * 64 + 256);
  const int n = stb_easy_font_print(0, 0, t.data(), nullptr, quads.data(), static_cast<int>(quads.size()));
  for (int q = 0; q < n; ++q) {
    float x0 = 1e9f, y0 = 1e9f, x1 = -1e9f, y1 = -1e9f;
    for (int v = 0; v < 4; ++v) {
      const float* p = reinterpret_cast<const float*>(quads.data() + (q * 4 + v) * 16);
      x0 = std::min(x0, p[0]), x1 = std::max(x1, p[0]), y0 = std::min(y0, p[1]), y1 = std::max(y1, p[1]);
    }
    fill(x + static_cast<int>(std::lround(x0 * static_cast<float>(scale))), y + static_cast<int>(std::lround(y0 * static_cast<float>(scale))),
         x + static_cast<int>(std::lround(x1 * static_cast<float>(scale))), y + static_cast<int>(std::lround(y1 * static_cast<float>(scale))), color);
  }
}
#else
int Raster::text_width(const std::string& s, int scale) { return static_cast<int>(s.size()) * 6 * std::max(1, scale); }
int Raster::line_height(int scale) { return 12 * std::max(1, scale); }
void Raster::text(int, int, const std::string&, uint32_t, int) {}
#endif

}  // namespace hipstudio::viz
