#pragma once
// `hipstudio --self-test`: drives the real UI state frame by frame, without a mouse, and checks
// every step against the engine: opens the default model and prompt, changes k, tries an invalid
// combination, steps through all iterations of one query block, opens every panel, decodes a few
// tokens, generates, saves a screenshot, then writes the run as a capture, reopens it read-only
// (views equal the live ones), refuses a damaged copy and closes it, saves a capture and exports a
// view through the File menu's code and reads them back, and fails cleanly to save into /proc.
// Then the inputs it must refuse in its own words without a crash (the fuzzer's longest prompt, a
// 100 KB one, an empty one, a missing model), a refit after a longer prompt, the 1024 px export
// preview inside the viewport and a reopened capture's prompt text (self_test_inputs.cpp). Then two
// captures of two runs compared side by side (self_test_compare.cpp).
// With --frames N it then puts a 4096-token mask on screen and measures N frames. With --soak it
// runs the soak script (soak.h) instead of the functional one.
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/gui/panel.h"
#include "app/gui/harness/scale.h"
#include "app/gui/harness/soak.h"

namespace hipstudio::gui {

class Worker;

// A step's check returns this to be called again on the next frame.
inline constexpr const char* kSelfTestMore = "\x01more";

// "shot.png" + "mask" -> "shot-mask.png": where the script's screenshots go.
std::string with_suffix(const std::string& path, const std::string& suffix);

// After a save: whether the status line reports `path` written (what File > Save capture shows).
bool saved_ok(const AppState& s, const std::string& path);

// Checks of written files, shared with the soak script.
std::string read_file_bytes(const std::string& path);
bool is_png_bytes(const std::string& bytes);
bool is_svg_text(const std::string& xml);  // tags nest and close, the root element is <svg>
// The p-quantile (0..1, nearest rank) of frame times; 0 for none.
double percentile(std::vector<double> v, double p);

struct SelfTestStep {
  std::string name;
  std::function<void(AppState&)> start;                     // once, when the step begins
  std::function<bool(const AppState&, const Snapshot&)> ready;  // wait until true (or time out)
  std::function<std::string(AppState&, const Snapshot&)> check; // "" = pass; may ask for more frames via `again`
  double timeout_s = 180;
  int min_frames = 2;                                          // frames to draw before checking
  bool fatal = false;                                          // a failure ends the script (nothing to test after it)
};

class SelfTest {
 public:
  // frames > 0: after the script, render that many frames of a synthetic long-prompt mask, and
  // print their statistics when `frame_stats`.
  // soak: when set (loops or seconds > 0), the soak script replaces the functional one; it reads
  // the worker to know when it has served a request.
  // scale.enabled: the scale script (scale.h) replaces the functional one.
  SelfTest(std::vector<std::unique_ptr<Panel>>& panels, const std::string& screenshot, int frames, bool frame_stats,
           const Worker& worker, const SoakLimit& soak = {}, const ScaleOptions& scale = {});

  // Once per frame, before the UI is drawn: advances the script.
  void tick(AppState& s, const Snapshot& snap, double now);
  // After the frame: the panels the layout drew in it (the "every panel draws" step reads them).
  void record_drawn(const std::vector<std::string>& panel_ids) { drawn_.insert(panel_ids.begin(), panel_ids.end()); }
  // After ImGui::Render(): the largest draw list's vertices (the long-prompt steps keep them far
  // below the 65,536 that ImGui's 16-bit indices allow).
  void record_draw_data(const ImDrawData* data);
  // After the frame: the frame time of the previous frame (measured between frame starts).
  void record_frame(double frame_ms, double cpu_ms);
  // Whether the app should pace its frames as in interactive use (at most ~60 a second): during the
  // scale script's knob and layer changes, whose times are the worker's as a user meets them, but
  // not while it measures frame times. Uncapped, the software-GL drawing of the headless machine
  // took the CPU cores the worker's host work runs on.
  bool paces_like_a_user() const;
  // Parts of the frame just drawn: building the UI, GL rendering, buffer swap (milliseconds).
  void record_parts(double ui_ms, double render_ms, double swap_ms);
  bool finished() const { return finished_; }
  int exit_code() const { return failures_ == 0 ? 0 : 1; }
  // Path to save now (after rendering this frame), or "".
  std::string take_screenshot_request();
  // Where the (virtual) mouse should be, as a fraction of the window; x < 0: leave it alone. The
  // script parks it on the status bar, and over the mask for the main screenshot's hover readout.
  float mouse_x = 0.01f, mouse_y = 0.99f;
  // Mouse button and wheel as the script wants them this frame; applied between the GLFW backend's
  // NewFrame and ImGui::NewFrame, so the panels see an ordinary click or scroll.
  bool mouse_down = false;
  float wheel = 0;
  int key_down = -1;  // a key held this frame (GLFW code), -1 none
  std::string type_text;  // characters typed on the next frame (then cleared)
  int window_width = 0, window_height = 0;  // > 0: the main loop resizes the window to this, once
  void inject_input(bool& down, float& wheel_io, bool* keys_down, int key_count) {
    down = mouse_down;
    wheel_io += wheel;
    wheel = 0;
    if (last_key_ >= 0 && last_key_ < key_count) keys_down[last_key_] = false;
    if (key_down >= 0 && key_down < key_count) keys_down[key_down] = true;
    last_key_ = key_down;
    if (!type_text.empty()) ImGui::GetIO().AddInputCharactersUTF8(type_text.c_str());
    type_text.clear();
  }

 private:
  void build_steps();
  // Opens a panel and checks it drew; with a screenshot path, saves <shot>-<panel id>.png and tells
  // on_shot where.
  SelfTestStep open_panel_step(Panel* panel, const std::string& name, double timeout_s,
                               std::function<void(const std::string& shot)> on_shot = {});
  void build_view_steps();    // self_test_views.cpp: stale / dense layer / token / heads / linked
  void build_panel_steps();   // self_test_panels.cpp: the Sweep panel (numbers, plot, cancel), the layers x heads grid
  void build_export_shot_steps();
  void build_capture_steps();
  void build_input_steps();   // self_test_inputs.cpp: long, empty and refused inputs, refit, preview, capture text
  void build_compare_steps(); // self_test_compare.cpp: two captures side by side, linked, their difference table
  void build_save_export_steps();
  void build_frame_steps();
  void build_scale_steps(const ScaleOptions& options);  // self_test_scale.cpp
  std::vector<std::unique_ptr<Panel>>& panels_;
  std::string screenshot_;
  int frames_ = 0;
  bool frame_stats_ = false;
  std::vector<SelfTestStep> steps_;
  size_t current_ = 0;
  bool started_ = false;
  double step_start_ = 0;
  int step_frames_ = 0;
  int failures_ = 0;
  bool finished_ = false;
  std::string pending_screenshot_;
  long mark_ = 0;  // the screenshot step's phase
  std::set<std::string> drawn_;  // panels drawn since the current "open panel" step began

  // Frame stats
  bool measuring_ = false, animate_ = false;
  std::vector<double> static_ms_, moving_ms_, ui_ms_, render_ms_, swap_ms_, cpu_ms_;
  int measured_ = 0;
  int64_t tokens_ = 4096;
  int last_key_ = -1;
  int64_t max_vertices_ = 0;  // since the current input step began (record_draw_data)
  std::unique_ptr<Soak> soak_;
  size_t loop_start_ = 0;   // first step of a soak loop
  bool aborted_ = false;    // a fatal step failed: no more soak loops
  int loop_failures_ = 0;   // failures_ when the current soak loop began
  int pressed_from_ = -1;  // stepper position when the Right arrow was last pressed
  std::shared_ptr<ScaleRun> scale_;  // the scale script's measurements (null: another script)
};

}  // namespace hipstudio::gui
