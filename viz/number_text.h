#pragma once
// A finite number as printf text in `format`, else `missing`: the one rule for the tables and CSV
// cells that print a value or say there is none (a NaN of a windowed layer, an untimed run).
#include <cmath>
#include <cstdio>
#include <string>

namespace hipstudio::viz {

inline std::string number_text(double v, const char* format, const char* missing) {
  if (!std::isfinite(v)) return missing;
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

// A figure's short number (a fitted normal's parameters, a bar's label): %.4g.
inline std::string figure_number(double v) { return number_text(v, "%.4g", "nan"); }

}  // namespace hipstudio::viz
