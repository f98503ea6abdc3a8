#include "captures/hit_ratio_chart.h"

#include <cmath>
#include <string>

namespace hipstudio::captures {

viz::Chart hit_ratio_step_chart(const offload::OffloadResult& r) {
  viz::ChartPlot plot;
  plot.x.label = "decode step";
  plot.y.label = "hit ratio";
  plot.y.lo = 0, plot.y.hi = 1;
  // Both contexts often read the same keys, so their curves coincide: sparse attention is drawn
  // first and solid, mask estimation over it dashed with ring markers, so neither hides the other.
  for (int c : {1, 0}) {
    const offload::ContextStats& ctx = c == 0 ? r.mask : r.sparse;
    viz::ChartSeries p;
    p.name = std::string(c == 0 ? "mask estimation" : "sparse attention") + " (" + std::to_string(ctx.bank_tokens) + ")";  // (bank slots)
    p.color = c;
    p.markers = true;
    p.dashed = c == 0;
    // Mask estimation reads only on refresh steps: its points are joined across the steps between,
    // so the dashed line the legend shows is what the plot draws.
    p.bridge_gaps = true;
    for (size_t s = 0; s < ctx.per_step_total.size(); ++s) {
      const offload::BankCounts& b = ctx.per_step_total[s];
      p.x.push_back(static_cast<double>(s));
      p.y.push_back(b.accesses > 0 ? offload::hit_ratio(b) : NAN);
    }
    plot.series.push_back(std::move(p));
  }
  viz::Chart chart;
  chart.title = "KV offloading: hit ratio per decode step";
  chart.plots.push_back(std::move(plot));
  return chart;
}

}  // namespace hipstudio::captures
