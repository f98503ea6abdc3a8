#pragma once
// The figures of a capture's views, rendered from its data: what `capture` stores under images/,
// what `report` embeds and writes to --png-dir. One list so the capture, the report and the
// exports show the same pictures.
#include <string>
#include <vector>

#include "captures/capture.h"
#include "engine/views/locality_view.h"
#include "engine/views/trace_view.h"

namespace hipstudio::captures {

struct Figure {
  std::string name;     // file name: "mask_L3_H0.png", "latency.svg"
  std::string view;     // mask, locality, cache, latency
  std::string caption;
  std::string bytes;    // PNG or SVG document
  bool png() const { return name.size() > 4 && name.compare(name.size() - 4, 4, ".png") == 0; }
};

struct FigureOptions {
  int64_t mask_px = 512;      // longest side of mask PNGs, exactly (max-pooled below one pixel per token)
  int64_t locality_heads = 3; // heads drawn per layer in the mean/std vs Delta plots
  int64_t head = 0;           // the head of the mask images and the first head of the locality plots
  int64_t delta = -1;         // the Delta of the locality histograms (-1: the first and last captured)
  std::string style = "paper";
  std::string only;           // write_figure_exports: just this file ("latency.pdf") or view ("latency"); "" all
};

// A captured trace as the views layer's trace view (engine/views/trace_view.h): the oracle's
// selection from the stored oracle scores, the GUI's rule; a capture written without them takes the
// oracle's blocks from its mask view of that layer (none where it has no masks of it).
BlockTraceView captured_trace_view(const Capture& capture, const CapturedTrace& trace);
// The locality views of view layer `index`, one per head (engine/views/locality_view.h), with the
// histogram at `delta` (the first stored Delta where `delta` was not stored) and, where the capture
// pooled other rows or Deltas than the one rule, its rule_note.
std::vector<LocalityView> captured_locality_views(const Capture& capture, size_t index, int64_t delta);
std::string iterations_title(const CapturedTrace& trace);
std::string iterations_subtitle(const Capture& capture, const CapturedTrace& trace);

// What every exported figure says under its title, so that a figure cut out of the report still
// names its run: "MODEL on DEVICE, DTYPE; T = N tokens; k K, b_q .., b_k .., sink .., window ..,
// l_d ..". The device string carries the thread count on the CPU.
std::string figure_context(const Capture& capture);
// Its first part: "MODEL on DEVICE, DTYPE".
std::string figure_run(const Capture& capture);

std::vector<Figure> capture_figures(const Capture& capture, const FigureOptions& options = {});
std::vector<Capture::Image> render_capture_images(const Capture& capture, const FigureOptions& options = {});

}  // namespace hipstudio::captures
