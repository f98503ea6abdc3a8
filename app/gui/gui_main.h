#pragma once
// `hipstudio` with no subcommand: the desktop GUI (Dear ImGui + GLFW + OpenGL 3).
#include <string>

#include <CLI/CLI.hpp>

namespace hipstudio::gui {

struct GuiOptions {
  bool self_test = false;   // scripted run of the real UI state; exit status = pass / fail
  std::string screenshot;   // PNG of the main window at the end of the self-test
  int frames = 0;           // with --self-test: then render this many frames of a 4096-token mask
  bool frame_stats = false; // print median / p99 frame time of those frames
  std::string soak;         // with --self-test: the soak script for this long ("30m", "90s", "2h") or loops ("25")
  std::string model;        // initial model path (default model when empty)
  std::string prompt;       // initial prompt text, or @FILE
  std::string capture;      // a capture to show read-only (`hipstudio open FILE`); errors go to the status line
  std::string compare;      // capture B beside it (`hipstudio open FILE --compare B`)
  std::string device;       // --gui-device cpu|cuda ("" : the saved or default device)
  std::string dtype;        // --gui-dtype f32|bf16|f16 ("" : the saved or default dtype)
  std::string timing_log;   // with --self-test: the scale script's timings go to this file
  std::string timing_steps; // with --self-test: "basic" (launch and a k change) or "all" (the default)
};

// Adds --self-test, --soak, --screenshot, --frames, --frame-stats, --gui-model, --gui-prompt,
// --gui-device, --gui-dtype, --timing-log, --timing-steps to the root.
void add_gui_options(CLI::App& root, GuiOptions& options);

// Whether `hipstudio open FILE` (the parsed `open` subcommand) shows the GUI: not with --print, and
// only where a window can open (DISPLAY or WAYLAND_DISPLAY set; always on macOS). Otherwise `open`
// prints the capture's parameters and metrics, as a build without the GUI does.
bool open_shows_gui(const CLI::App& open);

// Opens the window and runs until it closes; returns the process exit status.
int run_gui(const GuiOptions& options);

}  // namespace hipstudio::gui
