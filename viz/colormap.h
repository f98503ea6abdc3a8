#pragma once
// Colour maps for heat maps and text backgrounds. Colours are packed as ImGui's IM_COL32 does
// (bytes R, G, B, A in memory on little-endian machines, i.e. 0xAABBGGRR), so the same values go
// into OpenGL RGBA textures and ImGui draw lists without conversion.
#include <cstdint>

namespace hipstudio::viz {

struct Rgb {
  float r = 0, g = 0, b = 0;  // each in [0, 1]
};

uint32_t pack_rgba(Rgb c, float alpha = 1.0f);
uint32_t pack_rgba8(uint8_t r, uint8_t g, uint8_t b, uint8_t a = 255);
Rgb unpack_rgb(uint32_t packed);

enum class ColorMapKind { Viridis, Magma };

// t in [0, 1] (clamped); NaN gives mid grey. Piecewise-linear through the map's published stops,
// monotone in lightness, so a darker cell always means a smaller value.
Rgb colormap(ColorMapKind kind, double t);

// Diverging blue - neutral - red for signed values: v / limit in [-1, 1] (clamped). Negative is
// blue, positive red; `neutral` is the colour of 0 (white on light themes, dark grey on dark ones).
Rgb diverging(double v, double limit, Rgb neutral);

// Linear blend a -> b by t in [0, 1].
Rgb mix(Rgb a, Rgb b, float t);

// What a viewer with a dichromacy sees (Machado, Oliveira and Fernandes 2009, severity 1: a 3x3
// matrix on linear sRGB), to check that colours that must differ still do.
enum class ColorVision { Normal, Protanopia, Deuteranopia };
Rgb simulate_color_vision(Rgb c, ColorVision vision);
// CIE76 colour difference (Euclidean distance in CIELAB, D65): about 2.3 is just noticeable, above
// ~20 two swatches read as different colours at a glance.
double delta_e(Rgb a, Rgb b);

}  // namespace hipstudio::viz
