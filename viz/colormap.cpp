#include "viz/colormap.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace hipstudio::viz {

namespace {

// Nine evenly spaced stops of matplotlib's viridis and magma (t = 0, 1/8, ..., 1).
constexpr Rgb kViridis[] = {{0.267f, 0.005f, 0.329f}, {0.279f, 0.175f, 0.483f}, {0.230f, 0.322f, 0.546f},
                            {0.173f, 0.449f, 0.558f}, {0.128f, 0.567f, 0.551f}, {0.154f, 0.681f, 0.504f},
                            {0.370f, 0.789f, 0.383f}, {0.678f, 0.864f, 0.190f}, {0.993f, 0.906f, 0.144f}};
constexpr Rgb kMagma[] = {{0.001f, 0.000f, 0.014f}, {0.113f, 0.065f, 0.277f}, {0.317f, 0.071f, 0.485f},
                          {0.513f, 0.148f, 0.508f}, {0.716f, 0.215f, 0.475f}, {0.904f, 0.319f, 0.388f},
                          {0.990f, 0.512f, 0.382f}, {0.998f, 0.727f, 0.510f}, {0.987f, 0.991f, 0.750f}};

uint8_t to_byte(float v) { return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f)); }

}  // namespace

uint32_t pack_rgba8(uint8_t r, uint8_t g, uint8_t b, uint8_t a) {
  return static_cast<uint32_t>(r) | (static_cast<uint32_t>(g) << 8) | (static_cast<uint32_t>(b) << 16) |
         (static_cast<uint32_t>(a) << 24);
}

uint32_t pack_rgba(Rgb c, float alpha) { return pack_rgba8(to_byte(c.r), to_byte(c.g), to_byte(c.b), to_byte(alpha)); }

Rgb unpack_rgb(uint32_t p) {
  return {static_cast<float>(p & 0xff) / 255.0f, static_cast<float>((p >> 8) & 0xff) / 255.0f,
          static_cast<float>((p >> 16) & 0xff) / 255.0f};
}

Rgb mix(Rgb a, Rgb b, float t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

Rgb colormap(ColorMapKind kind, double t) {
  if (std::isnan(t)) return {0.5f, 0.5f, 0.5f};
  const Rgb* stops = kind == ColorMapKind::Viridis ? kViridis : kMagma;
  const int last = static_cast<int>(std::size(kViridis)) - 1;
  const double x = std::clamp(t, 0.0, 1.0) * last;
  const int i = std::min(static_cast<int>(x), last - 1);
  return mix(stops[i], stops[i + 1], static_cast<float>(x - i));
}

Rgb diverging(double v, double limit, Rgb neutral) {
  if (std::isnan(v) || !(limit > 0)) return neutral;
  const float t = static_cast<float>(std::clamp(v / limit, -1.0, 1.0));
  const Rgb blue{0.17f, 0.42f, 0.85f}, red{0.86f, 0.20f, 0.18f};
  return t < 0 ? mix(neutral, blue, -t) : mix(neutral, red, t);
}

namespace {

double to_linear(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
double to_srgb(double c) { return c <= 0.0031308 ? c * 12.92 : 1.055 * std::pow(c, 1 / 2.4) - 0.055; }

}  // namespace

Rgb simulate_color_vision(Rgb c, ColorVision vision) {
  if (vision == ColorVision::Normal) return c;
  // Machado et al. 2009, table of simulation matrices, severity 1.0.
  static const double kProtanopia[3][3] = {{0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216}, {-0.003882, -0.048116, 1.051998}};
  static const double kDeuteranopia[3][3] = {{0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}};
  const double(*m)[3] = vision == ColorVision::Protanopia ? kProtanopia : kDeuteranopia;
  const double l[3] = {to_linear(c.r), to_linear(c.g), to_linear(c.b)};
  float out[3];
  for (int i = 0; i < 3; ++i)
    out[i] = static_cast<float>(to_srgb(std::clamp(m[i][0] * l[0] + m[i][1] * l[1] + m[i][2] * l[2], 0.0, 1.0)));
  return {out[0], out[1], out[2]};
}

double delta_e(Rgb a, Rgb b) {
  auto lab = [](Rgb c, double out[3]) {
    const double r = to_linear(c.r), g = to_linear(c.g), bl = to_linear(c.b);
    const double x = (0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047, y = 0.2126 * r + 0.7152 * g + 0.0722 * bl,
                 z = (0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883;
    auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116.0; };
    out[0] = 116 * f(y) - 16, out[1] = 500 * (f(x) - f(y)), out[2] = 200 * (f(y) - f(z));
  };
  double p[3], q[3];
  lab(a, p), lab(b, q);
  return std::sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]));
}

}  // namespace hipstudio::viz
