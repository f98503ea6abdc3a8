#include "app/gui/settings_saver.h"

namespace hipstudio::gui {

bool SettingsSaver::update(const std::string& text, double now) {
  polled_at_ = now;
  if (text != pending_) {
    pending_ = text;
    changed_at_ = now;
  }
  if (pending_ == written_ || now - changed_at_ < delay_s_) return false;
  written_ = pending_;
  return true;
}

}  // namespace hipstudio::gui
