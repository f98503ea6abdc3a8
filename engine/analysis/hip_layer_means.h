#pragma once
// One head-quality field averaged the way every summary reports it (the HTML report's headline, a
// sweep's rows): over the heads of the layers HiP replaces, or of every layer when HiP replaces none.
// Non-finite values are left out: a sliding-window layer has no HiP run, and its numbers are NaN.
#include <cmath>
#include <cstdint>

#include "engine/analysis/paired_result.h"

namespace hipstudio {

inline double mean_over_hip_layers(const PairedAnalysis& a, double HeadQuality::*field) {
  bool any_hip = false;
  for (const LayerQuality& l : a.layers) any_hip |= !l.dense;
  double sum = 0;
  int64_t n = 0;
  for (const LayerQuality& l : a.layers)
    if (!l.dense || !any_hip)
      for (const HeadQuality& h : l.heads)
        if (std::isfinite(h.*field)) sum += h.*field, ++n;
  return n ? sum / static_cast<double>(n) : NAN;
}

}  // namespace hipstudio
