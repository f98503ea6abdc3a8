#include "app/cli_paths.h"

#include <sys/stat.h>

#include <filesystem>

#include "captures/atomic_file.h"
#include "engine/formats/errors.h"

namespace hipstudio::app {

namespace fs = std::filesystem;

namespace {

std::string quoted(const PathArg& p) { return p.option + " " + p.path; }

void check_input_file(const PathArg& in) {
  std::error_code ec;
  if (!fs::exists(in.path, ec)) throw InputError(quoted(in) + " does not exist: check the path");
  if (fs::is_directory(in.path, ec)) throw InputError(quoted(in) + " is a folder: name a file");
  if (!fs::is_regular_file(in.path, ec)) throw InputError(quoted(in) + " is not a regular file: name a file");
}

void check_output_file(const PathArg& out) {
  if (out.path.empty()) throw InputError(out.option + " is empty: name the file to write");
  // A folder, a socket or a link loop is refused; a device or FIFO must take writes; a new or regular
  // file (or the one a link names) needs a folder that takes new files (captures/atomic_file.h).
  captures::check_output_writable(out.path, out.option);
}

void check_output_folder(const PathArg& out) {
  if (out.path.empty()) throw InputError(out.option + " is empty: name the folder to write into");
  std::error_code ec;
  if (fs::exists(out.path, ec) && !fs::is_directory(out.path, ec))
    throw InputError(quoted(out) + " is a file, and " + out.option + " names a folder to write into: name a folder");
  if (fs::is_directory(out.path, ec)) {
    captures::check_folder_accepts_files(out.path, quoted(out));
  } else {
    // Created when the work is done; its parent must take it. Named as the user spelled it.
    const fs::path given_parent = fs::path(out.path).parent_path();
    const std::string parent = given_parent.empty() ? "." : given_parent.string();
    if (!fs::is_directory(parent, ec))
      throw InputError(quoted(out) + ": the folder " + parent + " that would hold it does not exist; create it first");
    captures::check_folder_accepts_files(parent, quoted(out));
  }
}

}  // namespace

void add_text_input(CommandPaths& paths, const std::string& option, const std::string& value) {
  if (value.rfind('@', 0) == 0 && value.rfind("@@", 0) != 0) paths.input_files.push_back({option, value.substr(1)});
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a), ea), cb = fs::weakly_canonical(fs::absolute(b), eb);
  return !ea && !eb && ca == cb;
}

void check_command_paths(const CommandPaths& p) {
  for (const PathArg& in : p.input_files) check_input_file(in);
  for (const PathArg& out : p.output_files) check_output_file(out);
  for (const PathArg& out : p.output_folders) check_output_folder(out);
  std::vector<PathArg> written = p.output_files;
  written.insert(written.end(), p.files_in_output_folders.begin(), p.files_in_output_folders.end());
  for (const PathArg& out : written)
    for (const PathArg& in : p.input_files)
      if (same_file(out.path, in.path))
        throw InputError(quoted(out) + " is " + in.option + " itself (" + in.path +
                         "): writing it would destroy the input; choose another output name");
  for (const PathArg& out : p.output_folders)
    for (const PathArg& in : p.input_files)
      if (same_file(out.path, in.path)) throw InputError(quoted(out) + " is " + in.option + " itself: name a new folder");
  for (size_t i = 0; i < written.size(); ++i)
    for (size_t j = i + 1; j < written.size(); ++j)
      if (same_file(written[i].path, written[j].path))
        throw InputError(quoted(written[j]) + " is also " + written[i].option +
                         ": two outputs cannot share one file; give each its own name");
}

}  // namespace hipstudio::app
