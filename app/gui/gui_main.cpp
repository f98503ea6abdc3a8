// The GUI's entry: window, Dear ImGui setup, the frame loop (one snapshot per frame), settings,
// drag and drop, screenshots, and one seam for a driver from outside (app/gui/frame_driver.h: the
// self-test and the soak).
#include "app/gui/gui_main.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#define GL_SILENCE_DEPRECATION
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include "app/gui/engine_jobs.h"
#include "app/gui/files.h"
#include "app/gui/frame_driver.h"
#include "app/gui/layout.h"
#include "app/gui/screenshot.h"
#include "app/gui/settings.h"
#include "app/gui/settings_saver.h"
#include "app/gui/worker.h"
#include "app/common/default_prompt.h"
#include "engine/formats/errors.h"

namespace hipstudio::gui {

namespace {

// The default story (assets/prompts/default.txt, compiled into app/common: one source).
const char* const kDefaultPrompt = app::kDefaultPrompt;

// Paths dropped on the window, handed from GLFW's callback to the frame loop.
std::mutex g_drop_mutex;
std::vector<std::string> g_dropped;

void on_drop(GLFWwindow*, int count, const char** paths) {
  std::lock_guard<std::mutex> lock(g_drop_mutex);
  for (int i = 0; i < count; ++i) g_dropped.emplace_back(paths[i]);
}

// CPU time of the whole process (all threads: ours, the worker's, Mesa's rasteriser threads).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

viz::MaskColors mask_colors(const PersistedSettings& s) {
  return s.classic_mask_colors ? viz::MaskColors::Classic : viz::MaskColors::ColorBlindSafe;
}

void on_glfw_error(int code, const char* message) { std::fprintf(stderr, "glfw error %d: %s\n", code, message); }

std::string read_prompt_option(const std::string& value) {
  if (value.rfind('@', 0) != 0) return value;
  std::ifstream in(value.substr(1), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void add_gui_options(CLI::App& root, GuiOptions& o) {
  root.add_flag("--self-test", o.self_test, "GUI: scripted run of the UI against the engine; exit 0 when every check passes");
  root.add_option("--screenshot", o.screenshot, "GUI: save a PNG of the main window at the end (of the self-test or of --frames)");
  root.add_option("--frames", o.frames,
                  "GUI: with --self-test, then render N frames of a synthetic 4096-token mask; without, quit after N frames")
      ->check(CLI::NonNegativeNumber);
  root.add_flag("--frame-stats", o.frame_stats, "GUI self-test: print median / p99 frame time of those frames");
  root.add_option("--soak", o.soak,
                  "GUI self-test: instead of the functional script, loop through loading, parameter changes, runs, "
                  "cancels, generation, exports and captures for DURATION (30m, 90s, 2h) or COUNT loops; fails if "
                  "memory or threads grow");
  root.add_option("--gui-model", o.model, "GUI: model to open (default: stories15M)");
  root.add_option("--gui-prompt", o.prompt, "GUI: prompt text or @FILE to open");
  root.add_option("--gui-device", o.device, "GUI: device to run the model on: cpu or cuda (default: the saved choice, else cpu)");
  root.add_option("--gui-dtype", o.dtype, "GUI: dtype to run the model in: f32, bf16 or f16 (default: the saved choice, else f32)");
  root.add_option("--timing-log", o.timing_log,
                  "GUI self-test: run the scale script (timings of loading, parameter changes, layer / head changes, "
                  "r_m, frame times; screenshots of every panel) and write its timings to FILE; also the script "
                  "run for a --gui-model other than the default");
  root.add_option("--timing-steps", o.timing_steps,
                  "GUI self-test's scale script: all (default) or basic (launch to the first mask and a k change)");
}

// The GUI's options checked before any window opens (input errors: exit 2, naming the fix).
void check_gui_options(const GuiOptions& opt) {
  if (!opt.device.empty() && opt.device != "cpu" && opt.device != "cuda")
    throw InputError("--gui-device '" + opt.device + "' is not a device: use --gui-device cpu or --gui-device cuda");
  if (!opt.dtype.empty() && opt.dtype != "f32" && opt.dtype != "bf16" && opt.dtype != "f16")
    throw InputError("--gui-dtype '" + opt.dtype + "' is not a dtype: use --gui-dtype f32, bf16 or f16");
  if (opt.device == "cuda" && !cuda_is_available())
    throw InputError("--gui-device cuda: CUDA is not available (this build has no CUDA, or this machine has no GPU): use --gui-device cpu");
  if (!opt.prompt.empty() && opt.prompt[0] == '@' && !std::ifstream(opt.prompt.substr(1)).good())
    throw InputError("--gui-prompt " + opt.prompt + ": cannot read " + opt.prompt.substr(1) + " (give a readable file after @, or the text itself)");
  const bool timing = !opt.timing_log.empty() || !opt.timing_steps.empty();
  if (timing && !opt.self_test) throw InputError("--timing-log and --timing-steps run the self-test's scale script: add --self-test");
  if (timing && !opt.soak.empty()) throw InputError("--timing-log and --soak are two different self-test scripts: use one of them");
  if ((timing || !opt.model.empty()) && opt.self_test && opt.soak.empty() && (opt.frames > 0 || opt.frame_stats))
    throw InputError("--frames and --frame-stats measure the functional self-test's synthetic mask; the scale script "
                     "(--timing-log, or a --gui-model) measures its own frames: drop --frames and --frame-stats");
  if (!opt.timing_steps.empty() && opt.timing_steps != "all" && opt.timing_steps != "basic")
    throw InputError("--timing-steps '" + opt.timing_steps + "': use --timing-steps all or --timing-steps basic");
  if (!opt.soak.empty() && !opt.self_test) throw InputError("--soak runs the self-test's soak script: add --self-test");
  if (!opt.timing_log.empty()) {
    std::ofstream probe(opt.timing_log, std::ios::app);
    if (!probe) throw InputError("--timing-log " + opt.timing_log + ": cannot write this file (give a path in a writable folder)");
  }
}

bool open_shows_gui(const CLI::App& open) {
  if (open.count("--print") > 0) return false;
#ifdef __APPLE__
  return true;
#else
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  return set("DISPLAY") || set("WAYLAND_DISPLAY");
#endif
}

int run_gui(const GuiOptions& opt) {
  check_gui_options(opt);
  // The self-test's options are checked here too: a bad value is an input error (exit 2) before any window opens.
  const FrameDriverStart start_driver = opt.self_test ? plan_self_test(opt) : FrameDriverStart{};
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr, "error: cannot open a window (no display? run under xvfb-run, or use a subcommand)\n");
    return 2;
  }
  auto panels = make_panels();
  AppState state;
  state.prompt = kDefaultPrompt;
  WindowGeometry geom;
  const std::string settings_path = config_dir() + "/settings.json";
  const std::string ini_path = config_dir() + "/imgui.ini";
  const bool persist = !opt.self_test;  // the self-test starts from defaults and leaves no trace
  SettingsSaver saver;  // writes settings.json a second after each change: a crash loses nothing older
  if (persist) {
    load_settings(settings_path, state, panels, geom);
    saver.set_written(settings_text(state, panels, geom));
  }
  if (!opt.model.empty()) state.model_path = opt.model;
  if (!opt.device.empty()) state.device = opt.device;
  if (!opt.dtype.empty()) state.dtype = opt.dtype;
  if (!opt.prompt.empty()) state.prompt = read_prompt_option(opt.prompt);
  state.applied = state.knobs;
  if (!opt.capture.empty()) open_capture_file(state, opt.capture);  // a damaged file: the error in the status line
  if (!opt.compare.empty()) open_compare_file(state, opt.compare);
  if (opt.self_test) geom = WindowGeometry{};

  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  GLFWwindow* window = glfwCreateWindow(geom.width, geom.height, "HiP Studio", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "error: cannot create an OpenGL 3.0 window\n");
    glfwTerminate();
    return 2;
  }
  if (geom.x >= 0 && geom.y >= 0) glfwSetWindowPos(window, geom.x, geom.y);
  glfwMakeContextCurrent(window);
  glfwSwapInterval(opt.self_test ? 0 : 1);
  glfwSetDropCallback(window, on_drop);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  static std::string ini_storage;
  ini_storage = ini_path;
  io.IniFilename = persist ? ini_storage.c_str() : nullptr;
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  // DPI: the monitor's content scale times the user's zoom.
  float content_scale = 1.0f;
  {
    float sx = 1, sy = 1;
    glfwGetWindowContentScale(window, &sx, &sy);
    content_scale = std::max(1.0f, std::max(sx, sy));
  }
  Theme theme = apply_theme(state.dark, content_scale * state.ui_scale, mask_colors(state));
  load_fonts(content_scale * state.ui_scale, theme);

  Worker worker;
  worker.set_notify([] { glfwPostEmptyEvent(); });
  const std::unique_ptr<FrameDriver> driver = start_driver ? start_driver(panels, worker, state) : nullptr;

  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double last_frame = seconds();
  double last_cpu = process_cpu_seconds();
  float frame_ms = 0;
  float shown_ms = 0;  // the status line's frame time: the last frame drawn without waiting for input
  int exit_code = 0;
  bool quit = false;
  long frame_count = 0;  // without --self-test, --frames N quits after N frames (smoke runs)
  while (!quit && !glfwWindowShouldClose(window)) {
    // Idle: sleep until input or a worker publish; busy or animating: full rate.
    const auto snap = worker.snapshot();
    const bool animating = snap->busy || state.playing || state.redraw_soon || driver || opt.frames > 0;
    state.redraw_soon = false;
    if (animating) {
      glfwPollEvents();
    } else {
      glfwWaitEventsTimeout(0.5);
    }
    const double now = seconds();
    frame_ms = static_cast<float>((now - last_frame) * 1000.0);
    last_frame = now;
    // An idle frame's time is mostly the wait for input (up to 0.5 s): it says nothing about drawing.
    if (animating) shown_ms = frame_ms;
    const double cpu_now = process_cpu_seconds();
    const double cpu_ms = (cpu_now - last_cpu) * 1000.0;
    last_cpu = cpu_now;
    {
      std::lock_guard<std::mutex> lock(g_drop_mutex);
      for (const auto& p : g_dropped) handle_dropped_path(state, p);
      g_dropped.clear();
    }
    const auto frame_snap = worker.snapshot();  // the one snapshot this frame reads
    if (driver) {
      FrameStart f{state, *frame_snap, now, frame_ms, cpu_ms};
      driver->begin_frame(f);
      int ww = 0, wh = 0;
      glfwGetWindowSize(window, &ww, &wh);
      if (f.cursor_x >= 0 && f.cursor_y >= 0) glfwSetCursorPos(window, f.cursor_x * ww, f.cursor_y * wh);
      if (f.window_width > 0) glfwSetWindowSize(window, f.window_width, f.window_height);
      if (driver->wants_quit()) {
        exit_code = driver->exit_code();
        break;
      }
    }
    const double ui_start = seconds();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (driver) driver->feed_input(io);
    ImGui::NewFrame();
    PanelContext ctx{state, *frame_snap, worker, theme, now, io.DeltaTime};
    const LayoutActions act = draw_layout(ctx, panels, shown_ms, !animating);
    ImGui::Render();
    const double render_start = seconds();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    glClearColor(bg.x, bg.y, bg.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    ++frame_count;
    const bool last_plain_frame = !driver && opt.frames > 0 && frame_count >= opt.frames;
    if (last_plain_frame && !opt.screenshot.empty()) {
      const std::string err = save_screenshot(opt.screenshot, w, h);
      std::printf("screenshot %s%s\n", opt.screenshot.c_str(), err.empty() ? "" : (": " + err).c_str());
    }
    if (last_plain_frame) quit = true;
    if (driver) {
      const std::string shot = driver->after_frame({act.drawn, ImGui::GetDrawData()});
      if (!shot.empty()) {
        const std::string err = save_screenshot(shot, w, h);
        std::printf("self-test: screenshot %s%s\n", shot.c_str(), err.empty() ? "" : (": " + err).c_str());
      }
    }
    const double swap_start = seconds();
    glfwSwapBuffers(window);
    // Interactive use: at most ~60 frames per second even where the swap does not wait for a
    // display refresh (Xvfb, software GL), so the UI leaves the CPU to the worker's measurements.
    // The scale self-test paces so too, except while it measures frame times.
    if ((!driver || driver->paces_like_a_user()) && opt.frames == 0) {
      const double spare = 1.0 / 60.0 - (seconds() - now);
      if (spare > 0.001) std::this_thread::sleep_for(std::chrono::duration<double>(spare));
    }
    if (driver) driver->after_swap((render_start - ui_start) * 1000, (swap_start - render_start) * 1000, (seconds() - swap_start) * 1000);

    // Settle this frame's edits: theme, scale, and the request the worker should serve.
    if (act.theme_changed || act.scale_changed || state.dark != theme.dark || theme.mask.hit != (state.dark ? viz::dark_mask_palette(mask_colors(state)) : viz::light_mask_palette(mask_colors(state))).hit) {
      theme = apply_theme(state.dark, content_scale * state.ui_scale, mask_colors(state));
      if (act.scale_changed) {
        load_fonts(content_scale * state.ui_scale, theme);
        ImGui_ImplOpenGL3_DestroyFontsTexture();
        ImGui_ImplOpenGL3_CreateFontsTexture();
      }
    }
    if (act.reset_settings) {
      const std::string model = state.model_path;
      const auto capture = state.capture;  // a reset of the layout keeps the capture on screen
      const auto file_task = state.file_task;  // and a save in progress
      state = *std::make_unique<AppState>();  // (a temporary AppState{} trips GCC 12's maybe-uninitialized)
      state.file_task = file_task;
      state.prompt = kDefaultPrompt;
      state.model_path = model;
      state.applied = state.knobs;
      state.capture = capture;
      for (auto& p : panels) p->open = true, p->slot = p->default_slot();
      theme = apply_theme(state.dark, content_scale * state.ui_scale, mask_colors(state));
    }
    if (act.quit) quit = true;
    if (state.cancel_requested) {
      worker.cancel();
      state.cancel_requested = false;
    }
    worker.submit(make_request(state));
    if (persist && saver.due(now)) {
      glfwGetWindowSize(window, &geom.width, &geom.height);
      glfwGetWindowPos(window, &geom.x, &geom.y);
      PersistedSettings saved = state;
      saved.knobs = state.applied;  // the last valid knobs: a refused combination is not saved
      const std::string text = settings_text(saved, panels, geom);
      if (saver.update(text, now)) write_settings_text(settings_path, text);
    }
  }
  if (persist) {
    glfwGetWindowSize(window, &geom.width, &geom.height);
    glfwGetWindowPos(window, &geom.x, &geom.y);
    PersistedSettings saved = state;
    saved.knobs = state.applied;  // the last valid knobs: a refused combination is not saved
    save_settings(settings_path, saved, panels, geom);
    ImGui::SaveIniSettingsToDisk(ini_storage.c_str());
  }
  worker.set_notify(nullptr);  // the worker may still publish while it winds down; GLFW is going away
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}

}  // namespace hipstudio::gui
