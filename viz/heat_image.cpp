#include "viz/heat_image.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace hipstudio::viz {

HeatGrid pool_max(const HeatGrid& g, int width, int height) {
  if (width <= 0 || height <= 0 || width > g.cols || height > g.rows)
    throw std::invalid_argument("pool_max: more texels than cells, or none");
  HeatGrid out;
  out.rows = height;
  out.cols = width;
  out.values.assign(static_cast<size_t>(width) * static_cast<size_t>(height), std::numeric_limits<float>::quiet_NaN());
  for (int64_t r = 0; r < g.rows; ++r) {
    float* line = out.values.data() + static_cast<size_t>(r * height / g.rows) * static_cast<size_t>(width);
    for (int64_t c = 0; c < g.cols; ++c) {
      const float v = g.at(r, c);
      if (std::isnan(v)) continue;
      float& t = line[c * width / g.cols];
      if (std::isnan(t) || v > t) t = v;
    }
  }
  return out;
}

void colorize_heat(const HeatGrid& g, ColorMapKind kind, float lo, float hi, float gamma, uint32_t none,
                   std::vector<uint32_t>& rgba) {
  rgba.resize(g.values.size());
  const float span = hi > lo ? hi - lo : 1.0f;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const float v = g.values[i];
    if (std::isnan(v)) {
      rgba[i] = none;
      continue;
    }
    float t = std::fmin(std::fmax((v - lo) / span, 0.0f), 1.0f);
    if (gamma != 1.0f) t = std::pow(t, gamma);
    rgba[i] = pack_rgba(colormap(kind, t));
  }
}

double log_scale_position(double v, double lo, double hi) {
  if (!(lo > 0) || !(hi > lo) || !(v > lo)) return 0.0;
  return std::fmin(1.0, std::log10(v / lo) / std::log10(hi / lo));
}

void colorize_heat_log(const HeatGrid& g, ColorMapKind kind, float lo, float hi, uint32_t none, std::vector<uint32_t>& rgba) {
  rgba.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const float v = g.values[i];
    rgba[i] = std::isnan(v) ? none : pack_rgba(colormap(kind, log_scale_position(v, lo, hi)));
  }
}

}  // namespace hipstudio::viz
