#pragma once
// Text for figures rendered offscreen (exported PNGs) in the screen's vector font: DejaVu Sans from
// fonts-dejavu-core, the file app/gui/theme.cpp gives ImGui, rasterised with antialiasing by
// stb_truetype (libstb-dev). Sizes are em sizes in pixels, as SVG's font-size, so a PNG and an SVG
// laid out with the same numbers set their text at the same size.
#include <cstdint>
#include <string>
#include <vector>

namespace hipstudio::viz {

inline constexpr const char* kSansFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
inline constexpr const char* kSansBoldFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";

// A line of text as 8-bit coverage: (height, width) alpha values, placed with its top-left corner
// at (pen x + left, baseline + top) for a pen at the start of the line on its baseline.
struct TextCoverage {
  int width = 0, height = 0;
  int left = 0, top = 0;
  std::vector<uint8_t> alpha;
};

class VectorFont {
 public:
  // The regular or bold face, loaded once per process; nullptr when the font file is missing or
  // not a font (figures then carry no text).
  static const VectorFont* sans(bool bold = false);

  // Advance width of `utf8` at em size `px`, kerning included (the pen's travel).
  double width(const std::string& utf8, double px) const;
  // Distance above and below the baseline of the font's tallest and deepest glyphs at `px` (both >= 0).
  double ascent(double px) const;
  double descent(double px) const;
  // The line's pixels: each glyph placed at its subpixel pen position, antialiased.
  TextCoverage rasterize(const std::string& utf8, double px) const;

  ~VectorFont();
  VectorFont(const VectorFont&) = delete;
  VectorFont& operator=(const VectorFont&) = delete;

 private:
  struct Impl;
  explicit VectorFont(Impl* impl) : impl_(impl) {}
  static const VectorFont* load(const char* path);
  Impl* impl_;
};

// The code points of UTF-8 text; a malformed byte reads as U+FFFD.
std::vector<uint32_t> utf8_code_points(const std::string& utf8);

}  // namespace hipstudio::viz
