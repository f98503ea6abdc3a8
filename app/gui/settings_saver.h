#pragma once
// When to write settings.json: soon after they change, not only on a clean quit, so that a crash
// loses at most the last moment's edits. Debounced: a slider being dragged rewrites the file once,
// a second after it stops. Torch- and ImGui-free (tests/gui drives it with a fake clock).
#include <string>

namespace hipstudio::gui {

class SettingsSaver {
 public:
  // `delay_s`: quiet time after the last change before writing; `poll_s`: how often the caller
  // needs to serialise the settings for update() (a 100 KB prompt is not dumped every frame).
  explicit SettingsSaver(double delay_s = 1.0, double poll_s = 0.25) : delay_s_(delay_s), poll_s_(poll_s) {}
  // The text the file already holds (what was loaded): an unchanged start writes nothing.
  void set_written(const std::string& text) { written_ = pending_ = text; }
  // Whether update() wants a new serialisation at `now` (seconds).
  bool due(double now) const { return now - polled_at_ >= poll_s_; }
  // The settings as they are now; true when the caller should write `text` now.
  bool update(const std::string& text, double now);

 private:
  double delay_s_, poll_s_;
  double polled_at_ = -1e300, changed_at_ = 0;
  std::string pending_, written_;
};

}  // namespace hipstudio::gui
