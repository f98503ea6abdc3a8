#pragma once
// SVG figures for papers (vector, so they stay sharp): each is a standalone <svg> document with a
// title, labelled axes with ticks and a legend, valid XML (text is escaped). Used by the report
// (inline) and written as .svg files by exports. The charts are viz/chart.h's chart model drawn by
// viz::svg_chart, the model the GUI's panels draw (the locality chart: viz/locality_chart.h).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "engine/offload/offload_result.h"
#include "engine/views/locality_view.h"
#include "engine/views/trace_view.h"
#include "viz/chart_svg.h"
#include "viz/figure.h"

namespace hipstudio::captures {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;  // same length; non-finite points are skipped
  std::string color;         // "#rrggbb" in every style, or "": the style's series colour of its index
  bool markers = true;
  std::string dash = "";     // non-empty: dashed (the chart model's one dash pattern); dashed markers are rings
  bool bridge_gaps = false;  // join the finite points across non-finite ones (else a gap breaks the line)
};

// Every chart below is drawn in `style`'s colours (background included) with `context` (model,
// device, dtype, T, parameters: figure_context) in up to two lines under its title.

// A line chart of one plot (for callers outside viz's chart model: the sweep and method figures).
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<PlotSeries>& series, bool log2_x = false, double y_lo = NAN,
                           double y_hi = NAN,  // a fixed y range where given (NaN: from the data)
                           const viz::FigureStyle& style = viz::paper_style(), const std::string& context = "");

// The locality view (engine/views/locality_view.h) as the panel draws it. A view whose rule_note is
// set (a capture pooled under another rule) says so in the line under the title.
// Its histogram of delta = s_{j+Delta} - s_j with the fitted normal (the view's fitted counts).
std::string svg_locality_histogram(const LocalityView& view, const std::string& title,
                                   const viz::FigureStyle& style = viz::paper_style(), const std::string& context = "");
// The panel as one figure: the histogram of heads[0] beside the mean and standard deviation of
// delta against Delta (log axis), one pair of curves per head given.
std::string svg_locality(const std::vector<LocalityView>& heads, const std::string& title,
                         const viz::FigureStyle& style = viz::paper_style(), const std::string& context = "");
// Hit ratio per decode step of both offloading contexts (mask estimation dashed over sparse attention).
std::string svg_hit_ratio_per_step(const offload::OffloadResult& offload, const viz::FigureStyle& style = viz::paper_style(),
                                   const std::string& context = "");
// Stacked latency bars (mask estimation, sparse attention, dense attention, other): dense vs HiP,
// prefill and mean decode step, measured on `device` (RunInfo::device). On the CPU the title says
// that HiP ran the float64 correctness reference; no speedup is drawn on any device.
std::string svg_latency_bars(const PairedAnalysis& analysis, const std::string& device = "",
                             const viz::FigureStyle& style = viz::paper_style(), const std::string& context = "");
// True for a CPU device string ("cpu (4 threads), f32") or an unknown one: HiP's timings there are
// the float64 reference's, so no speedup is claimed.
bool cpu_reference_device(const std::string& device);

// The iteration figure of one query block's search (iteration_figure.cpp) from the views layer's
// trace view: a row per step, alive nodes solid, pruned blocks faded with the iteration that pruned
// them, the view's oracle blocks marked.
std::string svg_iterations(const BlockTraceView& view, const std::string& title, const std::string& subtitle,
                           const viz::FigureStyle& style = viz::paper_style());

using viz::xml_escape;

}  // namespace hipstudio::captures
