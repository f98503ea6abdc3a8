#pragma once
// The file browser behind Open (prompt files, captures), Load model (a llama2.c file or a Hugging
// Face folder) and Save: a modal window on ImGui widgets over file_browser_model.h, with the
// recent-folders list. It never writes: a Save names its path, and the browser asks before a
// missing folder is created or an existing file is replaced (the caller then writes).
#include <string>
#include <vector>

#include "app/gui/file_browser_model.h"
#include "app/gui/save_question.h"
#include "app/gui/theme.h"

namespace hipstudio::gui {

enum class BrowseFor {
  kOpenFile,  // an existing file the filter accepts
  kModel,     // a model file, or the folder in view (a Hugging Face folder holds config.json)
  kSaveFile,  // a file to write (it may exist: replacing it is confirmed)
  kSaveFolder,  // a folder to write into: the one in view, or a new one named in the field (asked first)
};

class FileBrowser {
 public:
  // Opens the browser on the next draw(): `title` is its window title, `current` the path the
  // field holds now (the browser starts in its folder), `extensions` the file filter (".txt").
  void open(BrowseFor mode, std::string title, const std::string& current, std::vector<std::string> extensions);
  bool is_open() const { return open_; }

  // Draws the browser while it is open. Returns true on the frame the user chose a path (chosen());
  // `recent` is the recent-folders list (the chosen path's folder moves to its front).
  bool draw(std::vector<std::string>& recent, const Theme& theme);
  const std::string& chosen() const { return chosen_; }

 private:
  void go_to(const std::string& folder);
  bool choose(std::vector<std::string>& recent, const std::string& path);

  BrowseFor mode_ = BrowseFor::kOpenFile;
  std::string title_, chosen_, folder_edit_, name_edit_, error_;
  std::vector<std::string> extensions_;
  FolderListing listing_;
  bool open_ = false, request_popup_ = false, show_hidden_ = false;
  // A Save that waits for the user's yes (a folder to create, a file to replace).
  SaveQuestion question_;
};

}  // namespace hipstudio::gui
