#pragma once
// Light and dark themes, DPI scaling, and the few semantic colours panels share.
#include <cstdint>

#include "viz/mask_image.h"

struct ImFont;

namespace hipstudio::gui {

struct Theme {
  bool dark = true;
  float scale = 1.0f;            // DPI content scale x user zoom
  uint32_t text_dim = 0;         // secondary text
  uint32_t good = 0, bad = 0, warn = 0, accent = 0;  // IM_COL32 values
  uint32_t hip = 0, dense = 0;   // series colours: HiP vs dense
  uint32_t plot_bg = 0, grid = 0;
  uint32_t kept = 0, dropped = 0, repr = 0;  // stepper
  viz::MaskPalette mask;
  ImFont* mono = nullptr;        // monospace font for token text (may be null)
};

// Applies ImGui colours and sizes for `dark` at `scale` (style sizes scaled from defaults).
// `colors`: the mask outcomes' palette (viz/mask_image.h; colour-blind-safe unless asked).
Theme apply_theme(bool dark, float scale, viz::MaskColors colors = viz::MaskColors::ColorBlindSafe);

// Loads DejaVu Sans (+ Mono) at 15 px x scale when present, ImGui's default font otherwise.
// Must run before the first frame (or after clearing the atlas and recreating device objects).
void load_fonts(float scale, Theme& theme);

}  // namespace hipstudio::gui
