#pragma once
// The seam between the GUI's main loop (gui_main.cpp) and what drives it from outside: the scripted
// self-test and the soak (app/gui/harness, their own library). The loop holds one FrameDriver
// pointer, null in normal use; with one it draws at full rate and asks the driver at four points of
// each frame. The product code knows nothing of the scripts behind it.
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct ImGuiIO;
struct ImDrawData;

namespace hipstudio::gui {

struct AppState;
struct Snapshot;
struct GuiOptions;
class Panel;
class Worker;

// Before a frame is built (before the backends read the input devices).
struct FrameStart {
  AppState& state;          // the driver may edit it as a user would
  const Snapshot& snap;     // the one snapshot this frame reads
  double now;               // seconds since the loop began
  double frame_ms, cpu_ms;  // the frame just ended: wall time and the process's CPU time
  float cursor_x = -1, cursor_y = -1;       // out: the cursor, in fractions of the window (< 0: leave it)
  int window_width = 0, window_height = 0;  // out: > 0 resizes the window to this
};

// After the frame is rendered, before its buffers swap.
struct FrameEnd {
  const std::vector<std::string>& drawn;  // ids of the panels drawn
  const ImDrawData* draw_data;
};

class FrameDriver {
 public:
  virtual ~FrameDriver() = default;
  virtual void begin_frame(FrameStart& frame) = 0;
  // Between the backends' input and ImGui::NewFrame: mouse buttons, wheel, keys and typed text.
  virtual void feed_input(ImGuiIO& io) = 0;
  // Returns the path of a screenshot of this frame to write now ("" none).
  virtual std::string after_frame(const FrameEnd& frame) = 0;
  // The frame's parts in milliseconds: building the UI, rendering, swapping.
  virtual void after_swap(double ui_ms, double render_ms, double swap_ms) = 0;
  // Whether the loop paces frames as for a user (about 60 a second); false while it measures them.
  virtual bool paces_like_a_user() const = 0;
  virtual bool wants_quit() const = 0;
  virtual int exit_code() const = 0;  // the process's, once wants_quit()
};

// Makes the driver once the window, the panels and the worker exist.
using FrameDriverStart =
    std::function<std::unique_ptr<FrameDriver>(std::vector<std::unique_ptr<Panel>>& panels, const Worker& worker, const AppState& state)>;

// The --self-test driver for these options (the functional script, the soak or the scale script),
// defined by the harness library. Checks its own options first: a bad one throws InputError before
// any window opens.
FrameDriverStart plan_self_test(const GuiOptions& options);

}  // namespace hipstudio::gui
