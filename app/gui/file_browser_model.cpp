#include "app/gui/file_browser_model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace hipstudio::gui {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool accepted(const std::string& name, const std::vector<std::string>& extensions) {
  if (extensions.empty()) return true;
  const std::string n = lower(name);
  for (const std::string& e : extensions) {
    const std::string x = lower(e);
    if (n.size() >= x.size() && n.compare(n.size() - x.size(), x.size(), x) == 0) return true;
  }
  return false;
}

std::string normalised(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  if (ec) a = p;
  std::string s = a.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

FolderListing list_folder(const std::string& folder, const std::vector<std::string>& extensions, bool show_hidden) {
  FolderListing out;
  out.folder = normalised(folder.empty() ? fs::path(".") : fs::path(folder));
  std::error_code ec;
  fs::directory_iterator it(out.folder, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    out.error = "cannot read folder " + out.folder + ": " + ec.message();
    return out;
  }
  std::vector<BrowserEntry> folders, files;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (!show_hidden && !name.empty() && name[0] == '.') continue;
    std::error_code e;
    const bool is_folder = it->is_directory(e);  // follows links: a link to a folder is a folder
    if (e) continue;
    if (is_folder) {
      folders.push_back({name, true, -1});
    } else if (it->is_regular_file(e) && !e && accepted(name, extensions)) {
      const auto size = it->file_size(e);
      files.push_back({name, false, e ? -1 : static_cast<int64_t>(size)});
    }
  }
  if (ec) {
    out.error = "cannot read folder " + out.folder + ": " + ec.message();
    return out;
  }
  const auto by_name = [](const BrowserEntry& a, const BrowserEntry& b) { return a.name < b.name; };
  std::sort(folders.begin(), folders.end(), by_name);
  std::sort(files.begin(), files.end(), by_name);
  out.entries = std::move(folders);
  out.entries.insert(out.entries.end(), files.begin(), files.end());
  return out;
}

std::string parent_folder(const std::string& folder) {
  const fs::path p(normalised(folder));
  return p.has_parent_path() ? normalised(p.parent_path()) : p.string();
}

std::string join_path(const std::string& folder, const std::string& name) {
  const fs::path n(name);
  return n.is_absolute() ? normalised(n) : normalised(fs::path(folder) / n);
}

std::string starting_folder(const std::string& path) {
  std::error_code ec;
  fs::path p = path.empty() ? fs::current_path(ec) : fs::path(normalised(path));
  while (!p.empty()) {
    if (fs::is_directory(p, ec)) return normalised(p);
    if (!p.has_parent_path() || p.parent_path() == p) break;
    p = p.parent_path();
  }
  return normalised(fs::current_path(ec));
}

SaveCheck check_save_target(const std::string& path) {
  SaveCheck c;
  if (path.empty()) {
    c.error = "no file name: type one";
    return c;
  }
  const fs::path p(normalised(path));
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    c.error = p.string() + " is a folder: type a file name inside it";
    return c;
  }
  c.replaces_file = fs::exists(p, ec);
  // The first folder on the way that is missing, and no file standing where a folder must be.
  fs::path folder = p.parent_path(), first_missing;
  while (!folder.empty()) {
    if (fs::is_directory(folder, ec)) break;
    if (fs::exists(folder, ec)) {
      c.error = folder.string() + " is a file, not a folder: choose another place";
      return c;
    }
    first_missing = folder;
    if (!folder.has_parent_path() || folder.parent_path() == folder) break;
    folder = folder.parent_path();
  }
  if (!first_missing.empty()) c.missing_folder = p.parent_path().string();
  return c;
}

std::string create_folders(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  return ec ? "cannot create folder " + folder + ": " + ec.message() : std::string();
}

void push_recent_folder(std::vector<std::string>& recent, const std::string& folder) {
  if (folder.empty()) return;
  const std::string f = normalised(folder);
  recent.erase(std::remove(recent.begin(), recent.end(), f), recent.end());
  recent.insert(recent.begin(), f);
  if (recent.size() > kMaxRecentFolders) recent.resize(kMaxRecentFolders);
}

std::string readable_bytes(int64_t bytes) {
  if (bytes < 0) return "";
  char buf[32];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else {
    const char* units[] = {"KB", "MB", "GB", "TB"};
    double v = static_cast<double>(bytes) / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 3) v /= 1024.0, ++u;
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

}  // namespace hipstudio::gui
