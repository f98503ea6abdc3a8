#include "app/gui/files.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "app/gui/capture_view.h"
#include "app/gui/gui_messages.h"

namespace hipstudio::gui {

bool open_prompt_file(AppState& s, const std::string& path) {
  // Said before anything else: a folder opens as an empty stream on Linux (an empty prompt, whose
  // refusal would hide the real mistake), and a missing file is named as missing.
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    s.status_message = "cannot open " + path + ": no such file (check the path)";
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    s.status_message = prompt_is_folder_message(path);
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    s.status_message = "cannot open " + path + ": not readable (check its permissions)";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  s.prompt = text.str();
  s.prompt_path = path;
  s.add_recent_prompt(path);
  s.status_message = "prompt from " + path;
  return true;
}

bool open_capture_file(AppState& s, const std::string& path) {
  try {
    s.capture = load_capture_view(path);
  } catch (const std::exception& e) {  // InputError from the reader, bad_alloc on a huge file
    s.status_message = std::string("cannot open capture: ") + e.what();
    return false;
  }
  s.status_message = "capture " + path + " (read-only; File > Close capture returns to the live run)";
  return true;
}

bool open_compare_file(AppState& s, const std::string& path) {
  try {
    s.compare = load_compare_capture(path);
  } catch (const std::exception& e) {
    s.status_message = std::string("cannot open capture B: ") + e.what();
    return false;
  }
  s.status_message = "comparing with capture " + path + " (the Compare captures panel)";
  s.focus_panel = "compare_captures";
  return true;
}

void close_capture(AppState& s) {
  if (!s.capture) return;
  s.status_message = "closed capture " + s.capture->path;
  s.capture.reset();
}

void handle_dropped_path(AppState& s, const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    s.status_message = "dropped path not found: " + path;
    return;
  }
  auto ends_with = [&](const char* suffix) {
    const std::string x(suffix);
    return path.size() >= x.size() && path.compare(path.size() - x.size(), x.size(), x) == 0;
  };
  if (!S_ISDIR(st.st_mode) && ends_with(".hipcap")) {
    open_capture_file(s, path);
  } else if (S_ISDIR(st.st_mode) || ends_with(".bin") || ends_with(".safetensors")) {
    s.model_path = path;  // the Recent models list gets it once it loads (panel_load.cpp)
    s.status_message = "model: " + path;
  } else {
    open_prompt_file(s, path);
  }
}

}  // namespace hipstudio::gui
