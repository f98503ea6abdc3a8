#include "app/gui/file_browser.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/gui/widgets.h"

namespace hipstudio::gui {

namespace {

bool holds_config(const std::string& folder) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(folder) / "config.json", ec);
}

void error_text(const Theme& theme, const std::string& text) {
  if (text.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(theme.bad));
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

}  // namespace

void FileBrowser::open(BrowseFor mode, std::string title, const std::string& current, std::vector<std::string> extensions) {
  mode_ = mode;
  title_ = std::move(title);
  extensions_ = std::move(extensions);
  chosen_.clear();
  error_.clear();
  question_.forget();
  std::error_code ec;
  const bool is_file = !current.empty() && std::filesystem::is_regular_file(current, ec);
  name_edit_ = is_file || mode == BrowseFor::kSaveFile ? std::filesystem::path(current).filename().string() : "";
  if (mode == BrowseFor::kSaveFolder) name_edit_.clear();
  go_to(starting_folder(current));
  open_ = request_popup_ = true;
}

void FileBrowser::go_to(const std::string& folder) {
  listing_ = list_folder(folder, extensions_, show_hidden_);
  if (mode_ == BrowseFor::kSaveFolder)  // folders only: the files there are not what is picked
    listing_.entries.erase(std::remove_if(listing_.entries.begin(), listing_.entries.end(), [](const BrowserEntry& e) { return !e.folder; }),
                           listing_.entries.end());
  folder_edit_ = listing_.folder;
}

bool FileBrowser::choose(std::vector<std::string>& recent, const std::string& path) {
  chosen_ = path;
  std::error_code ec;
  push_recent_folder(recent, std::filesystem::is_directory(path, ec) ? path : parent_folder(path));
  open_ = false;
  ImGui::CloseCurrentPopup();
  return true;
}

bool FileBrowser::draw(std::vector<std::string>& recent, const Theme& theme) {
  if (!open_) return false;
  const std::string popup = title_ + "###file_browser";
  if (request_popup_) {
    ImGui::OpenPopup(popup.c_str());
    request_popup_ = false;
  }
  // Inside the work area whatever the window's size, so its buttons are always on screen.
  fit_next_window(ImVec2(760 * theme.scale, 520 * theme.scale));
  bool still_open = true, done = false;
  if (!ImGui::BeginPopupModal(popup.c_str(), &still_open)) {
    open_ = still_open && open_;
    return false;
  }
  keep_window_inside_viewport();
  if (question_.asking()) {
    if (question_.draw(error_)) done = choose(recent, question_.path());
    error_text(theme, error_);
    ImGui::EndPopup();
    return done;
  }

  // The folder: typed (Enter goes there), one up, or a recent one.
  if (ImGui::Button("Up")) go_to(parent_folder(listing_.folder));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-ImGui::GetFrameHeight() * 5.0f);
  if (ImGui::InputText("##folder", &folder_edit_, ImGuiInputTextFlags_EnterReturnsTrue)) go_to(folder_edit_);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  if (ImGui::BeginCombo("##recent_folders", "Recent", ImGuiComboFlags_HeightLarge)) {
    if (recent.empty()) ImGui::TextDisabled("(none yet)");
    for (const std::string& f : recent)
      if (ImGui::Selectable(f.c_str())) go_to(f);
    ImGui::EndCombo();
  }
  error_text(theme, listing_.error);

  // The entries, clipped to the visible rows: a folder of 100k files draws like a small one.
  const float footer = ImGui::GetFrameHeightWithSpacing() * 3.2f;
  ImGui::BeginChild("##entries", ImVec2(-1, -footer), true);
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(listing_.entries.size()));
  std::string enter_folder, pick_file;
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const BrowserEntry& e = listing_.entries[static_cast<size_t>(i)];
      const std::string label = (e.folder ? e.name + "/" : e.name) + "##" + std::to_string(i);
      const bool selected = !e.folder && e.name == name_edit_;
      if (ImGui::Selectable(label.c_str(), selected, ImGuiSelectableFlags_AllowDoubleClick | ImGuiSelectableFlags_SpanAllColumns)) {
        if (e.folder) {
          if (ImGui::IsMouseDoubleClicked(0) || mode_ != BrowseFor::kModel) enter_folder = e.name;
        } else {
          name_edit_ = e.name;
          if (ImGui::IsMouseDoubleClicked(0)) pick_file = e.name;
        }
      }
      if (!e.folder) {
        ImGui::SameLine(ImGui::GetContentRegionAvail().x - 80 * theme.scale + ImGui::GetCursorPosX());
        ImGui::TextDisabled("%s", readable_bytes(e.bytes).c_str());
      }
    }
  }
  clipper.End();
  if (listing_.entries.empty() && listing_.error.empty()) ImGui::TextDisabled("(no folders or matching files here)");
  ImGui::EndChild();
  if (!enter_folder.empty()) go_to(join_path(listing_.folder, enter_folder));

  // The name and the buttons.
  ImGui::SetNextItemWidth(-1);
  const char* hint = mode_ == BrowseFor::kSaveFile     ? "file name to save"
                     : mode_ == BrowseFor::kSaveFolder ? "new folder name (empty: the folder in view)"
                                                       : "file name (or pick one above)";
  const bool enter = ImGui::InputTextWithHint("##name", hint, &name_edit_, ImGuiInputTextFlags_EnterReturnsTrue);
  error_text(theme, error_);
  const std::string target = name_edit_.empty() ? std::string() : join_path(listing_.folder, name_edit_);
  if (mode_ == BrowseFor::kSaveFile) {
    if ((ImGui::Button("Save") || enter) && question_.check(target, false, error_)) done = choose(recent, target);
  } else if (mode_ == BrowseFor::kSaveFolder) {
    const std::string into = target.empty() ? listing_.folder : target;
    if ((ImGui::Button("Use this folder") || enter) && question_.check(into, true, error_)) done = choose(recent, into);
  } else {
    const std::string open_path = !pick_file.empty() ? join_path(listing_.folder, pick_file) : target;
    std::error_code ec;
    if (ImGui::Button("Open") || enter || !pick_file.empty()) {
      if (open_path.empty()) {
        error_ = mode_ == BrowseFor::kModel ? "pick a model file, or use the folder in view" : "pick a file";
      } else if (!std::filesystem::exists(open_path, ec)) {
        error_ = open_path + " does not exist";
      } else {
        done = choose(recent, open_path);
      }
    }
    if (mode_ == BrowseFor::kModel && !done) {
      ImGui::SameLine();
      if (ImGui::Button("Use this folder")) done = choose(recent, listing_.folder);
      if (ImGui::IsItemHovered())
        side_tooltip("%s", holds_config(listing_.folder) ? "This folder holds config.json: a Hugging Face model folder"
                                                   : "A Hugging Face model folder holds config.json (this one does not)");
    }
  }
  if (!done) {
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) {
      open_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Checkbox("Hidden files", &show_hidden_)) go_to(listing_.folder);
  }
  ImGui::EndPopup();
  if (!still_open) open_ = false;
  return done;
}

}  // namespace hipstudio::gui
