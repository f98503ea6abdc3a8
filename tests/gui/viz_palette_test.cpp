// The mask outcome colours under simulated colour-vision deficiencies: the default (Okabe-Ito) set
// keeps every pair of outcomes (hit, false pick, miss, sink, window) and each against "not
// attended" apart for protanopes and deuteranopes, where the earlier set merged hit and false pick.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "viz/colormap.h"
#include "viz/mask_image.h"

namespace hipstudio::viz {
namespace {

// The smallest CIE76 distance between any two of the palette's outcome colours (and "not
// attended", the background they sit on) as `vision` sees them.
double closest_pair(const MaskPalette& p, ColorVision vision) {
  const std::vector<uint32_t> c{p.hit, p.false_pick, p.miss, p.sink, p.dense, p.empty};
  double m = 1e9;
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = i + 1; j < c.size(); ++j)
      m = std::min(m, delta_e(simulate_color_vision(unpack_rgb(c[i]), vision), simulate_color_vision(unpack_rgb(c[j]), vision)));
  return m;
}

TEST(VizPalette, SimulationAndDistanceAreSane) {
  const Rgb white{1, 1, 1}, black{0, 0, 0};
  EXPECT_NEAR(delta_e(white, black), 100.0, 0.5);
  EXPECT_NEAR(delta_e(white, white), 0.0, 1e-9);
  for (ColorVision v : {ColorVision::Protanopia, ColorVision::Deuteranopia}) {
    // Greys stay grey; red and green, told apart with normal vision, come close.
    const Rgb g = simulate_color_vision({0.5f, 0.5f, 0.5f}, v);
    EXPECT_NEAR(g.r, 0.5f, 0.01f);
    EXPECT_NEAR(g.b, 0.5f, 0.01f);
    const Rgb red{0.8f, 0.2f, 0.2f}, green{0.45f, 0.55f, 0.2f};
    EXPECT_LT(delta_e(simulate_color_vision(red, v), simulate_color_vision(green, v)), delta_e(red, green) / 2);
  }
}

TEST(VizPalette, OutcomesStayApartUnderProtanopiaAndDeuteranopia) {
  for (bool dark : {false, true}) {
    const MaskPalette safe = dark ? dark_mask_palette() : light_mask_palette();
    const MaskPalette classic = dark ? dark_mask_palette(MaskColors::Classic) : light_mask_palette(MaskColors::Classic);
    for (ColorVision v : {ColorVision::Normal, ColorVision::Protanopia, ColorVision::Deuteranopia}) {
      const double s = closest_pair(safe, v), c = closest_pair(classic, v);
      std::printf("%s, vision %d: closest outcome pair %.1f (classic %.1f)\n", dark ? "dark" : "light", static_cast<int>(v), s, c);
      EXPECT_GE(s, 24.0);
    }
    // What the issue saw: the classic hit and false pick read as one yellow to a deuteranope.
    EXPECT_LT(delta_e(simulate_color_vision(unpack_rgb(classic.hit), ColorVision::Deuteranopia),
                      simulate_color_vision(unpack_rgb(classic.false_pick), ColorVision::Deuteranopia)),
              16.0);
  }
  // The exports' default is the safe set.
  EXPECT_EQ(light_mask_palette().hit, light_mask_palette(MaskColors::ColorBlindSafe).hit);
}

}  // namespace
}  // namespace hipstudio::viz
