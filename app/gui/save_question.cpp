#include "app/gui/save_question.h"

#include <filesystem>
#include <system_error>

#include <imgui.h>

namespace hipstudio::gui {

bool SaveQuestion::check(const std::string& path, bool folder, std::string& error) {
  ask_ = Ask::kNone;
  path_ = path;
  error.clear();
  if (folder) {
    std::error_code ec;
    check_ = SaveCheck{};
    if (path.empty()) {
      error = "no folder: give one";
    } else if (std::filesystem::exists(path, ec)) {
      if (!std::filesystem::is_directory(path, ec)) error = path + " is a file, not a folder: give a folder";
    } else {
      check_.missing_folder = path;
    }
  } else {
    check_ = check_save_target(path);
    error = check_.error;
  }
  if (!error.empty()) return false;
  if (!check_.missing_folder.empty()) ask_ = Ask::kCreateFolder;
  else if (check_.replaces_file) ask_ = Ask::kReplace;
  return ask_ == Ask::kNone;
}

bool SaveQuestion::draw(std::string& error) {
  if (ask_ == Ask::kCreateFolder) {
    ImGui::TextWrapped("The folder %s does not exist. Create it?", check_.missing_folder.c_str());
    if (ImGui::Button("Create folder")) {
      const std::string err = create_folders(check_.missing_folder);
      if (!err.empty()) {
        error = err;
        ask_ = Ask::kNone;
        return false;
      }
      if (check_.replaces_file) {
        ask_ = Ask::kReplace;
        return false;
      }
      ask_ = Ask::kNone;
      return true;
    }
  } else if (ask_ == Ask::kReplace) {
    ImGui::TextWrapped("%s exists. Replace it?", path_.c_str());
    if (ImGui::Button("Replace")) {
      ask_ = Ask::kNone;
      return true;
    }
  } else {
    return false;
  }
  ImGui::SameLine();
  if (ImGui::Button("Back")) ask_ = Ask::kNone;
  return false;
}

}  // namespace hipstudio::gui
