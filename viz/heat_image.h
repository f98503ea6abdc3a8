#pragma once
// Max-pooled heat maps of real values (dense attention probabilities, per-head quality tables) and
// their colours. Max-pooling keeps a single strong cell visible at any level of detail.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "viz/colormap.h"

namespace hipstudio::viz {

// A (rows, cols) row-major grid; NaN cells are "no value" and are skipped by pooling.
struct HeatGrid {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols)
  float at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

// Pools the grid into (height, width) texels (height <= rows, width <= cols; same cell -> texel
// mapping as pool_mask_flags): each texel is the max of its non-NaN cells (NaN if none).
HeatGrid pool_max(const HeatGrid& grid, int width, int height);

// Colours `grid` with `kind`, mapping [lo, hi] to [0, 1]; `gamma` < 1 brightens small values
// (attention probabilities are heavy-tailed). NaN cells get `none`.
void colorize_heat(const HeatGrid& grid, ColorMapKind kind, float lo, float hi, float gamma, uint32_t none,
                   std::vector<uint32_t>& rgba);

// Log colour scale: log10(v) over [log10(lo), log10(hi)] to [0, 1] (lo > 0; values <= lo get 0),
// so that probabilities from 1e-4 to 1 all show, where a linear scale leaves the image nearly black.
void colorize_heat_log(const HeatGrid& grid, ColorMapKind kind, float lo, float hi, uint32_t none, std::vector<uint32_t>& rgba);
// The colour scale position of `v` under colorize_heat_log (the colorbar and the tests use it).
double log_scale_position(double v, double lo, double hi);

}  // namespace hipstudio::viz
