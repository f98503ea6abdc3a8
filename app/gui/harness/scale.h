#pragma once
// `hipstudio --self-test --timing-log OUT.log` (or --self-test with a --gui-model other than the
// default): the scale script. Instead of the functional script (whose checks assume stories15M) it
// measures the GUI with whatever model, prompt, device and dtype it was given, each as wall-clock
// seconds from the UI action to the end of the first frame that draws the result:
//   launch (process start) -> first HiP mask on screen, model load included;
//   k, b_q and b_k changes -> new mask, recall and latency of the viewed layer on screen;
//   a layer change and a head change -> the new mask on screen;
//   an r_m change -> the new decode results;
//   a sweep of four k values (the Sweep panel's Run) -> its result on screen;
//   each selection method picked in the Side by side panel -> its mask of the viewed layer on
//   screen, and a switch back to one already computed;
//   median and p99 frame time while idle and while zooming the mask (wheel events over the canvas);
// then screenshots of every panel (with_suffix(screenshot, panel id)). Each measurement is one line
// `timing: <what> <value> <unit> (target ...)` of the log (written and flushed as it is measured, so
// a run killed mid-way keeps what it measured), with a `result:` line saying what changed. Targets
// are benchmarks, never asserted: the exit status is 0 when every step produced its result.
#include <memory>
#include <string>

namespace hipstudio::gui {

struct ScaleOptions {
  bool enabled = false;
  std::string timing_log;  // "" : the lines go to stdout only
  bool basic = false;      // --timing-steps basic: launch and the k change only (then the mask's screenshot)
  std::string device, dtype;
  std::string model;       // "" : the default model (stories15M): the GUI's default knobs
  std::string prompt;      // as given (text or @FILE), for the log
};

struct ScaleRun;  // self_test_scale.cpp

// Called by the self-test driver: every frame's time, and a step that failed (timed out, or its
// check said why).
void scale_record_frame(ScaleRun& run, double frame_ms);
// Whether frame times are being measured now (the idle and zoom steps): the app then draws at full
// rate; otherwise it paces frames as interactive use does (gui_main.cpp).
bool scale_measuring_frames(const ScaleRun& run);
void scale_step_failed(ScaleRun& run, const std::string& step, const std::string& why);
// At the end: the summary lines; returns the number of steps that produced no result.
int scale_finish(ScaleRun& run);

// Seconds since this process started (/proc/self/stat against CLOCK_BOOTTIME, 10 ms ticks); < 0
// where that cannot be read.
double process_age_seconds();

}  // namespace hipstudio::gui
