#pragma once
// File > Save capture... and File > Export view...: the live run written as a capture (the same
// build_capture request `hipstudio capture` makes, plus the query blocks the user stepped through
// and images of the open views), and the current layer/head exported as PNG / SVG / CSV through
// captures/export_view. Both run as a background task; the status line shows what it is doing and
// then the result or the error (read-only folder, disk full). write_capture is atomic, so a failed
// save leaves an earlier file as it was.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/panel.h"
#include "app/gui/save_question.h"

namespace hipstudio::gui {

// ~/hipstudio-<YYYY-MM-DD-HHMMSS>.hipcap and ~/hipstudio-export-<...> (the folder of an export).
std::string default_capture_path();
std::string default_export_dir();

// "~/x" -> "$HOME/x": how the dialogs' paths are read.
std::string expand_home(const std::string& path);

// A dialog's Save / Export button and what it asks first (save_question.h): while a question waits,
// the question and its buttons instead of the button. `folder`: `path` is a folder to write into.
// True on the frame the write may start: pressed (or `enter`) with nothing to ask, or agreed to.
bool save_button(const char* label, const std::string& path, bool folder, bool enter, SaveQuestion& question,
                 std::string& error);

// Why saving / exporting is not possible now ("" when it is): a capture is open (saving is disabled
// then: the file on disk is the capture), no finished live run, a synthetic run, a task running.
std::string save_unavailable(const AppState& s, const Snapshot& snap);

// The capture views of the open panels (mask, iterations, locality, cache, latency), plus
// "iterations" when query blocks were stepped through.
std::vector<std::string> open_capture_views(const std::vector<std::unique_ptr<Panel>>& panels, const AppState& s);

// The query blocks a save stores traces of: the stepped ones that fit the current run (the dialog
// counts these, the save writes these).
std::vector<SteppedBlock> traceable_blocks(const AppState& s, const Snapshot& snap);

// Starts writing the current live run to `path` in the background (s.file_task); false with the
// reason in s.status_message when save_unavailable() says so.
bool start_save_capture(AppState& s, const Snapshot& snap, const std::vector<std::string>& views, const std::string& path);


// Starts exporting what is on screen: the viewed layer / head as a mask figure (PNG at the chosen
// size, or full-detail tiles, and SVG), the iteration figure of the viewed query block (SVG), the
// locality figure with the viewed Delta's histogram, hit-ratio / latency SVG, per-head metrics CSV.
// With `pdf`, every SVG also as PDF beside it (viz::svg_to_pdf). `only` ("" = all) is one of
// export_figure_choices(): that figure alone.
bool start_export_view(AppState& s, const Snapshot& snap, const ExportOptions& options, const std::string& only = "", bool pdf = false);
// "mask", "iterations", "locality", "hit-ratio", "latency", "metrics".
const std::vector<std::string>& export_figure_choices();

// Once per frame: while a task runs, its progress in the status line; when it ends, its result
// (errors start with "cannot", which the status line shows in red). True while a task runs.
bool poll_file_task(AppState& s);

}  // namespace hipstudio::gui
