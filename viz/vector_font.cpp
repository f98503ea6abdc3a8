#include "viz/vector_font.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

// libstb-dev's header (docs/GPU.md: a machine without it puts stb_truetype.h in include/stb/); a
// build without it has no figure text, as a machine without the font file.
#include "viz/stb_truetype_static.h"

namespace hipstudio::viz {

#if HIPSTUDIO_HAVE_TRUETYPE
struct VectorFont::Impl {
  std::string data;
  stbtt_fontinfo info{};
  int ascent = 0, descent = 0;  // font units
};

const VectorFont* VectorFont::load(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  auto* impl = new Impl;
  impl->data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const auto* bytes = reinterpret_cast<const unsigned char*>(impl->data.data());
  const int offset = stbtt_GetFontOffsetForIndex(bytes, 0);
  if (offset < 0 || !stbtt_InitFont(&impl->info, bytes, offset)) {
    delete impl;
    return nullptr;
  }
  int gap = 0;
  stbtt_GetFontVMetrics(&impl->info, &impl->ascent, &impl->descent, &gap);
  return new VectorFont(impl);
}

const VectorFont* VectorFont::sans(bool bold) {
  // Loaded once, kept for the process (figures render from worker threads too).
  static const VectorFont* regular = load(kSansFontPath);
  static const VectorFont* heavy = load(kSansBoldFontPath);
  return bold && heavy ? heavy : regular;
}

VectorFont::~VectorFont() { delete impl_; }

namespace {
float em_scale(const stbtt_fontinfo& info, double px) { return stbtt_ScaleForMappingEmToPixels(&info, static_cast<float>(px)); }
}  // namespace

double VectorFont::width(const std::string& s, double px) const {
  const float scale = em_scale(impl_->info, px);
  const std::vector<uint32_t> cps = utf8_code_points(s);
  double w = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    int advance = 0, lsb = 0;
    stbtt_GetCodepointHMetrics(&impl_->info, static_cast<int>(cps[i]), &advance, &lsb);
    w += advance * static_cast<double>(scale);
    if (i + 1 < cps.size())
      w += stbtt_GetCodepointKernAdvance(&impl_->info, static_cast<int>(cps[i]), static_cast<int>(cps[i + 1])) * static_cast<double>(scale);
  }
  return w;
}

double VectorFont::ascent(double px) const { return impl_->ascent * static_cast<double>(em_scale(impl_->info, px)); }
double VectorFont::descent(double px) const { return -impl_->descent * static_cast<double>(em_scale(impl_->info, px)); }

TextCoverage VectorFont::rasterize(const std::string& s, double px) const {
  const stbtt_fontinfo& f = impl_->info;
  const float scale = em_scale(f, px);
  const std::vector<uint32_t> cps = utf8_code_points(s);
  // Each glyph's box at its pen position, then the union; glyphs are drawn into it one by one
  // (coverage adds, saturating: overlapping glyphs such as "fi" keep both).
  struct Glyph {
    int cp;
    float shift;  // subpixel part of the pen's x
    int x0, y0, x1, y1;
  };
  std::vector<Glyph> glyphs;
  double pen = 0;
  TextCoverage out;
  int bx0 = 0, by0 = 0, bx1 = 0, by1 = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    const int cp = static_cast<int>(cps[i]);
    const double whole = std::floor(pen);
    const auto shift = static_cast<float>(pen - whole);
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    stbtt_GetCodepointBitmapBoxSubpixel(&f, cp, scale, scale, shift, 0, &x0, &y0, &x1, &y1);
    const int ox = static_cast<int>(whole);
    if (x1 > x0 && y1 > y0) {
      glyphs.push_back({cp, shift, x0 + ox, y0, x1 + ox, y1});
      if (glyphs.size() == 1) bx0 = x0 + ox, by0 = y0, bx1 = x1 + ox, by1 = y1;
      bx0 = std::min(bx0, x0 + ox), by0 = std::min(by0, y0), bx1 = std::max(bx1, x1 + ox), by1 = std::max(by1, y1);
    }
    int advance = 0, lsb = 0;
    stbtt_GetCodepointHMetrics(&f, cp, &advance, &lsb);
    pen += advance * static_cast<double>(scale);
    if (i + 1 < cps.size()) pen += stbtt_GetCodepointKernAdvance(&f, cp, static_cast<int>(cps[i + 1])) * static_cast<double>(scale);
  }
  if (glyphs.empty()) return out;
  out.left = bx0, out.top = by0, out.width = bx1 - bx0, out.height = by1 - by0;
  out.alpha.assign(static_cast<size_t>(out.width) * static_cast<size_t>(out.height), 0);
  std::vector<unsigned char> g;
  for (const Glyph& gl : glyphs) {
    const int w = gl.x1 - gl.x0, h = gl.y1 - gl.y0;
    g.assign(static_cast<size_t>(w) * static_cast<size_t>(h), 0);
    stbtt_MakeCodepointBitmapSubpixel(&f, g.data(), w, h, w, scale, scale, gl.shift, 0, gl.cp);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        uint8_t& a = out.alpha[static_cast<size_t>(gl.y0 - by0 + y) * static_cast<size_t>(out.width) + static_cast<size_t>(gl.x0 - bx0 + x)];
        a = static_cast<uint8_t>(std::min(255, a + g[static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)]));
      }
  }
  return out;
}

#else
struct VectorFont::Impl {};
const VectorFont* VectorFont::sans(bool) { return nullptr; }
const VectorFont* VectorFont::load(const char*) { return nullptr; }
VectorFont::~VectorFont() { delete impl_; }
double VectorFont::width(const std::string&, double) const { return 0; }
double VectorFont::ascent(double) const { return 0; }
double VectorFont::descent(double) const { return 0; }
TextCoverage VectorFont::rasterize(const std::string&, double) const { return {}; }
#endif

std::vector<uint32_t> utf8_code_points(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1fu) : n == 3 ? (b & 0x0fu) : (b & 0x07u);
    bool ok = n > 0 && i + static_cast<size_t>(n) <= s.size();
    for (int k = 1; ok && k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (c >> 6) == 2;
      cp = (cp << 6) | (c & 0x3fu);
    }
    out.push_back(ok ? cp : 0xfffdu);
    i += ok ? static_cast<size_t>(n) : 1;
  }
  return out;
}

}  // namespace hipstudio::viz
