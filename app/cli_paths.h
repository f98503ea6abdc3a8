#pragma once
// Every file a command reads or writes, checked before any work: inputs exist and are files,
// outputs are not folders (or folders, for folder outputs), their folders exist and take new files,
// and no output is an input or another output, however it is spelled (relative, through a symbolic
// link, a hard link). So no command can overwrite what the user gave it, and no check fails at 100%.
#include <string>
#include <vector>

namespace hipstudio::app {

struct PathArg {
  std::string option;  // how the user named it: "--out", "the capture", "--json"
  std::string path;
};

struct CommandPaths {
  std::vector<PathArg> input_files;    // must exist and be regular files
  std::vector<PathArg> output_files;   // must not be folders; their folders must exist and be writable
  std::vector<PathArg> output_folders; // must not be files; created when missing (the parent must exist)
  // Files a command writes inside an output folder, compared with the inputs like output files.
  std::vector<PathArg> files_in_output_folders;
};

// A text option's value "@FILE" is an input file (read before the work); "TEXT" and "@@..." are not.
void add_text_input(CommandPaths& paths, const std::string& option, const std::string& value);

// Throws InputError naming the option, the path, the problem and the fix.
void check_command_paths(const CommandPaths& paths);

// Whether two paths name the same file or folder (existing: same device and inode; else the same
// absolute path once symbolic links in the existing part are resolved).
bool same_file(const std::string& a, const std::string& b);

}  // namespace hipstudio::app
