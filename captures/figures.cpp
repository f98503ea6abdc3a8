#include "captures/figures.h"

#include <algorithm>

#include "captures/mask_png.h"
#include "captures/svg_plots.h"

namespace hipstudio::captures {

std::vector<Figure> capture_figures(const Capture& c, const FigureOptions& o) {
  std::vector<Figure> out;
  const PairedAnalysis& a = c.analysis;
  const hip::HipParams& p = a.options.hip.hip;
  const int64_t tokens = static_cast<int64_t>(a.prompt_ids.size());
  for (size_t i = 0; i < c.masks.size(); ++i) {
    const int64_t l = c.view_layers[i];
    const MaskExport mask = mask_export(c.masks[i], p, tokens, 0);
    const std::string dense = l < a.options.hip.dense_layers ? " (runs dense; what HiP would select)" : "";
    out.push_back({"mask_L" + std::to_string(l) + "_H0.png", "mask",
                   "Layer " + std::to_string(l) + ", head 0: HiP's key blocks per query block" + dense,
                   encode_png(render_mask(mask, o.mask_px))});
  }
  for (size_t i = 0; i < c.locality.size(); ++i) {
    const int64_t l = c.view_layers[i];
    const auto& heads = c.locality[i];
    const size_t drawn = std::min<size_t>(heads.size(), static_cast<size_t>(std::max<int64_t>(1, o.locality_heads)));
    std::vector<hip::ScoreLocality> some(heads.begin(), heads.begin() + static_cast<std::ptrdiff_t>(drawn));
    // The plot draws the first few heads only: the caption and title say which, of how many.
    const std::string which = drawn < heads.size() ? "heads 0-" + std::to_string(drawn - 1) + " of " + std::to_string(heads.size())
                                                   : "all " + std::to_string(heads.size()) + " heads";
    out.push_back({"locality_L" + std::to_string(l) + ".svg", "locality",
                   "Layer " + std::to_string(l) + ", " + which + ": histogram of score differences (head 0, first Delta) and "
                   "their mean and std against key distance Delta",
                   svg_locality(some, -1, "Score locality, layer " + std::to_string(l) + ", " + which)});
  }
  if (!c.locality.empty() && !c.locality.back().empty()) {
    const hip::ScoreLocality& h0 = c.locality.back()[0];
    const int64_t last_layer = c.view_layers[c.locality.size() - 1];
    std::vector<size_t> picks;
    if (!h0.deltas.empty()) picks.push_back(0);
    if (h0.deltas.size() > 1) picks.push_back(h0.deltas.size() - 1);
    for (size_t i : picks) {
      const hip::DeltaStats& d = h0.deltas[i];
      out.push_back({"locality_hist_L" + std::to_string(last_layer) + "_H0_D" + std::to_string(d.delta) + ".svg", "locality",
                     "Layer " + std::to_string(last_layer) + ", head 0: histogram of score differences at Delta = " +
                         std::to_string(d.delta) + " with the fitted normal",
                     svg_locality_histogram(d, "Score differences, Delta = " + std::to_string(d.delta))});
    }
  }
  if (c.has_offload)
    out.push_back({"hit_ratio.svg", "cache", "Hit ratio of the offloading banks per decode step", svg_hit_ratio_per_step(c.offload)});
  if (c.has_view("latency"))
    out.push_back({"latency.svg", "latency", "Latency breakdown, dense vs HiP", svg_latency_bars(a)});
  return out;
}

std::vector<Capture::Image> render_capture_images(const Capture& c) {
  std::vector<Capture::Image> images;
  for (Figure& f : capture_figures(c)) images.push_back({f.name, std::move(f.bytes)});
  return images;
}

}  // namespace hipstudio::captures
