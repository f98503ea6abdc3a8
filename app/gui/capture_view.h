#pragma once
// A capture file shown in the GUI instead of a live run (README "Captures and reports"): the
// capture's PairedAnalysis becomes the AnalysisView every panel reads, and the views (masks,
// traces, dense probabilities, locality, offloading) are recomputed from its LayerInputs exactly
// as for a live run, since the kernels are pure functions of them. Read-only: the capture's
// parameters replace the sliders' until File > Close capture.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/app_state.h"
#include "app/gui/results.h"

namespace hipstudio::gui {

struct OpenCapture {
  std::string path;
  uint64_t id = 0;                                // a new id per open: reopening a rewritten file recomputes
  std::shared_ptr<const AnalysisView> analysis;   // the capture's analysis, model info inside
  HipKnobs knobs;                                 // the capture's parameters, as the (disabled) sliders show them
  std::string banner;                             // "Capture FILE (read-only): model, date, device"
  std::vector<std::string> params;                // parameter lines for the sidebar, one per method at the end
  std::vector<std::string> methods;               // the methods the capture holds, in order; the first is shown
  // The capture held each token's text (captures::CaptureInfo::prompt_pieces): the token views
  // show it. Without it they show "#id" and the sidebar shows the manifest's prompt text.
  bool has_pieces = false;
};

// Reads and validates the whole file (captures::read_capture). Throws InputError with the
// reader's message (damage, version, missing Q/K/V) for the status line.
std::shared_ptr<const OpenCapture> load_capture_view(const std::string& path);

// Capture B of an A/B comparison (panel_compare_captures.cpp), beside what is on screen (A): its
// views as stored (the masks it holds are drawn, nothing is recomputed), with the same cursors.
struct CompareCapture {
  std::shared_ptr<const OpenCapture> view;  // B as load_capture_view reads it, its stored masks in
                                            // view->analysis->analysis->masks (its view layers)
  // The mask snapshot of `layer` for the mask canvas, or null where B holds no masks of it.
  std::shared_ptr<const LayerMaskSnapshot> masks(int64_t layer) const;
};
// Throws InputError as load_capture_view does, and when B holds no masks (captured without the
// "mask" view).
std::shared_ptr<const CompareCapture> load_compare_capture(const std::string& path);

}  // namespace hipstudio::gui
