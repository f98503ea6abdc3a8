// The self-test as the main loop's FrameDriver (app/gui/frame_driver.h): the functional script, the
// soak or the scale script, chosen from the GUI's options.
#include <memory>

#include <imgui.h>

#include "app/gui/frame_driver.h"
#include "app/gui/gui_main.h"
#include "app/gui/harness/self_test.h"
#include "engine/formats/errors.h"

namespace hipstudio::gui {

namespace {

class SelfTestDriver final : public FrameDriver {
 public:
  explicit SelfTestDriver(std::unique_ptr<SelfTest> test) : test_(std::move(test)) {}

  void begin_frame(FrameStart& f) override {
    test_->record_frame(f.frame_ms, f.cpu_ms);
    f.cursor_x = test_->mouse_x, f.cursor_y = test_->mouse_y;  // where the last tick left it
    test_->tick(f.state, f.snap, f.now);
    if (test_->window_width > 0) {  // the script asks for a window size (the 1280x720 check), once
      f.window_width = test_->window_width, f.window_height = test_->window_height;
      test_->window_width = test_->window_height = 0;
    }
  }
  void feed_input(ImGuiIO& io) override { test_->inject_input(io.MouseDown[0], io.MouseWheel, io.KeysDown, IM_ARRAYSIZE(io.KeysDown)); }
  std::string after_frame(const FrameEnd& f) override {
    test_->record_drawn(f.drawn);
    test_->record_draw_data(f.draw_data);
    return test_->take_screenshot_request();
  }
  void after_swap(double ui_ms, double render_ms, double swap_ms) override { test_->record_parts(ui_ms, render_ms, swap_ms); }
  bool paces_like_a_user() const override { return test_->paces_like_a_user(); }
  bool wants_quit() const override { return test_->finished(); }
  int exit_code() const override { return test_->exit_code(); }

 private:
  std::unique_ptr<SelfTest> test_;
};

}  // namespace

FrameDriverStart plan_self_test(const GuiOptions& opt) {
  const SoakLimit soak = opt.soak.empty() ? SoakLimit{} : parse_soak_limit(opt.soak);  // a bad value: exit 2 now
  // The scale script: asked for (--timing-log / --timing-steps), or a model the functional script's
  // checks (written for stories15M) do not fit.
  ScaleOptions scale;
  scale.enabled = opt.soak.empty() && (!opt.timing_log.empty() || !opt.timing_steps.empty() || !opt.model.empty());
  scale.timing_log = opt.timing_log;
  scale.basic = opt.timing_steps == "basic";
  scale.model = opt.model;
  scale.prompt = opt.prompt;
  return [opt, soak, scale](std::vector<std::unique_ptr<Panel>>& panels, const Worker& worker, const AppState& state) mutable {
    scale.device = state.device;  // the saved or given choice the run starts from
    scale.dtype = state.dtype;
    return std::unique_ptr<FrameDriver>(std::make_unique<SelfTestDriver>(
        std::make_unique<SelfTest>(panels, opt.screenshot, opt.frames, opt.frame_stats, worker, soak, scale)));
  };
}

}  // namespace hipstudio::gui
