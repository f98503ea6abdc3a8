#pragma once
// Numbers behind the plots and the iteration stepper, kept out of the drawing code so they can be
// tested: axis ticks and the pruning steps of a trace (the locality histogram's fitted normal is
// the views layer's: engine/views/locality_view.h).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/hip_trace.h"

namespace hipstudio::viz {

// About `target` round tick values (1, 2, 5 x 10^n steps) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target);
// Ticks of an axis of cells (tokens): nice_ticks restricted to whole cells, so a short prompt gets
// no "2.5" token. The mask view and the exported mask figure tick with it.
std::vector<double> cell_ticks(double lo, double hi, int target);
// Ticks of a logarithmic axis over [lo, hi] (lo > 0): the powers of ten inside it.
std::vector<double> log_ticks(double lo, double hi);
// A tick's label: "12k" from 10,000, whole numbers bare, one decimal from 1, else 2 significant digits.
std::string tick_label(double v);

// "1.5 KiB", "12.0 MiB".
std::string format_bytes(double bytes);

// One state of the hierarchical search: the nodes alive after `iteration` (-1: the initial nodes).
struct TraceStep {
  int iteration = -1;
  std::vector<std::pair<int32_t, int32_t>> nodes;  // [begin, end) key blocks, ascending
  int64_t alive_blocks = 0;                        // key blocks still inside some node
  // Share of the oracle's blocks still inside a node: what the search can still find. After the
  // last iteration every node is one block and this is the final recall.
  double oracle_coverage = 1.0;
};

// Steps 0..iterations (the initial nodes, then one per iteration). With N <= Kb (no search) one
// step whose nodes are the selected blocks.
std::vector<TraceStep> trace_steps(const hip::MaskTrace& trace, const std::vector<int32_t>& oracle_blocks);

// For each key block of the search range [lo, hi) (index b - lo): the step at which it left the
// alive nodes (1 = pruned by iteration 1, ...), 0 when no initial node held it, steps.size() when
// it survived every step. Both the iteration view and its export fade pruned blocks by this.
std::vector<int> pruned_at_step(const std::vector<TraceStep>& steps, int64_t lo, int64_t hi);

}  // namespace hipstudio::viz

namespace hipstudio::viz {

// Column bars rasterised on the CPU into one RGBA image, so that a plot with thousands of bars
// is one textured quad for the GPU (a software rasteriser pays per primitive). Bars are painted in
// order, later over earlier; each covers the pixel columns its [x0, x1) overlaps (at least one)
// and the rows from y_from up to y_to (data units; y grows upwards in the image).
struct ImageBar {
  double x0 = 0, x1 = 0;
  double y_from = 0, y_to = 0;
  uint32_t color = 0;
};
// (height, width) row-major, row 0 at the top; `background` where nothing is painted.
std::vector<uint32_t> rasterize_bars(const std::vector<ImageBar>& bars, double x_lo, double x_hi, double y_lo,
                                     double y_hi, int width, int height, uint32_t background);

}  // namespace hipstudio::viz
