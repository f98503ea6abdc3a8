#pragma once
// The questions asked before anything is written where the user did not expect it: a folder that
// does not exist is created only once the user agreed (Save never creates a folder tree silently),
// and an existing file is replaced only once the user agreed. The file browser's Save, File > Save
// capture... and File > Export view... draw it inside their own modal window.
#include <string>

#include "app/gui/file_browser_model.h"

namespace hipstudio::gui {

class SaveQuestion {
 public:
  // Save / Export was pressed for `path`: a file to write, or with `folder` a folder to write into.
  // True when nothing needs asking (write now); false with a question to draw(), or with `error` set
  // (a folder named as the file, a file where the folder should be, an empty name).
  bool check(const std::string& path, bool folder, std::string& error);
  bool asking() const { return ask_ != Ask::kNone; }
  const std::string& path() const { return path_; }
  // While asking: the question and its buttons. True on the frame the user agreed to everything
  // asked (a missing folder is created then; a failure to create it sets `error` and asks no more).
  bool draw(std::string& error);
  void forget() { ask_ = Ask::kNone; }

 private:
  enum class Ask { kNone, kCreateFolder, kReplace } ask_ = Ask::kNone;
  std::string path_;
  SaveCheck check_;
};

}  // namespace hipstudio::gui
