#pragma once
// What the GUI's file browser shows and decides, without ImGui: a folder's entries (folders first,
// then the files a filter accepts, each group sorted by name), the recent-folders list, and the
// checks a Save makes before it writes (a missing folder is never created silently: the browser
// asks; an existing file is replaced only after the user confirms). Debian packages no ImGui file
// dialog, so the browser is a small one on std::filesystem (file_browser.h draws it).
#include <cstdint>
#include <string>
#include <vector>

namespace hipstudio::gui {

struct BrowserEntry {
  std::string name;  // the entry's file name, no folder
  bool folder = false;
  int64_t bytes = -1;  // a file's size; -1 for a folder or a size that could not be read
};

struct FolderListing {
  std::string folder;  // the folder listed, absolute and normalised
  std::vector<BrowserEntry> entries;
  std::string error;   // why the folder could not be read (entries then empty)
};

// The entries of `folder`: sub-folders, then the files whose name ends with one of `extensions`
// (case-insensitive, e.g. ".txt"; empty: every file); each group in name order. Hidden entries (a
// leading '.') only with show_hidden. An entry that cannot be inspected (a broken link) is left out.
FolderListing list_folder(const std::string& folder, const std::vector<std::string>& extensions, bool show_hidden);

// The folder above `folder` ("/" stays "/").
std::string parent_folder(const std::string& folder);
// `name` inside `folder`; an absolute `name` stands for itself.
std::string join_path(const std::string& folder, const std::string& name);

// Where the browser opens: the folder of `path` if it names an existing file or folder (a folder
// itself), else the first existing folder above it, else the working directory.
std::string starting_folder(const std::string& path);

// What writing `path` would do, checked before anything is written.
struct SaveCheck {
  std::string error;           // refused: empty name, a folder named as the file, a file in the way of a folder
  std::string missing_folder;  // non-empty: this folder (and any above it) does not exist yet; ask first
  bool replaces_file = false;  // an existing file would be replaced; ask first
  bool ok() const { return error.empty(); }
};
SaveCheck check_save_target(const std::string& path);
// Creates the folders check_save_target reported missing, after the user agreed; returns an error
// message, empty on success.
std::string create_folders(const std::string& folder);

// The folder `folder` moves to the front of `recent` (no duplicates, at most kMaxRecentFolders).
inline constexpr size_t kMaxRecentFolders = 8;
void push_recent_folder(std::vector<std::string>& recent, const std::string& folder);

// "4.2 KB", "12.0 MB": a file size for the listing.
std::string readable_bytes(int64_t bytes);

}  // namespace hipstudio::gui
