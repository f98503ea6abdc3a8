#pragma once
// The offloading simulation's hit ratio per decode step as a chart (viz/chart.h): what the GUI's KV
// cache panel draws and what the report and `export --what hit-ratio` write as SVG.
#include "engine/offload/offload_result.h"
#include "viz/chart.h"

namespace hipstudio::captures {

// One plot: sparse attention (series colour 0, solid) and over it mask estimation (colour 1,
// dashed with ring markers, joined across the steps it reads nothing: no refresh there), each
// named with its bank's slots; y is the hit ratio in [0, 1], a step without reads has none (NaN).
viz::Chart hit_ratio_step_chart(const offload::OffloadResult& offload);

}  // namespace hipstudio::captures
