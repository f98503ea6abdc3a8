#pragma once
// Every file the tool writes goes through here, under one rule for what an output path may already be:
//   - nothing, or a regular file: the bytes go to a temporary file beside it, are flushed to disk, and
//     the temporary is renamed over it. A crash or a full disk leaves the earlier file (if any) as it
//     was; an existing file keeps its permission bits.
//   - a symbolic link (a chain of them): the link stays; the file it finally names gets the rule above
//     or below, its temporary beside that file (never beside the link).
//   - a character or block device or a FIFO: written in place (opened for writing, no temporary, no
//     rename), as a shell redirection would; it is never replaced by a regular file. No output seeks
//     (AtomicOutput writes front to back), so a FIFO takes a capture as it is streamed. A FIFO with
//     no reader waits for one.
//   - anything else (a folder, a socket): refused with InputError.
#include <string>
#include <string_view>

namespace hipstudio::captures {

enum class OutputKind {
  NewFile,      // nothing there yet: created (atomically)
  RegularFile,  // replaced atomically
  InPlace,      // a device or FIFO: written straight to it
};

struct OutputTarget {
  OutputKind kind = OutputKind::NewFile;
  std::string path;  // the file written: `path` itself, or what its symbolic links finally name
};

// Where writing `path` goes and how. Throws InputError naming `option` and `path` for a folder, a
// socket, or a link loop.
OutputTarget resolve_output(const std::string& path, const std::string& option);

// An output written piece by piece under the rule above (a capture streamed entry by entry): each
// write() goes to the temporary beside the target, or straight to the device or FIFO; commit()
// flushes, closes and renames the temporary into place. Destroyed without commit() (an error while
// producing the pieces), the temporary is removed and the target stays as it was. Errors are
// InputError naming the path and the system's reason (disk full, read-only...).
class AtomicOutput {
 public:
  explicit AtomicOutput(const std::string& path);
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;
  ~AtomicOutput();
  void write(std::string_view bytes);
  void commit();

 private:
  [[noreturn]] void fail(const char* what);
  std::string shown_, target_, tmp_;
  bool in_place_ = false, existed_ = false;
  unsigned mode_ = 0;  // permission bits of the file replaced
  int fd_ = -1;
};

// The whole of `bytes` through AtomicOutput.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Before long work whose result goes to `path`: throws InputError (naming `option`, the path, the
// folder and the fix) when the file cannot be written under the rule above: the folder of a new or
// regular target does not exist or takes no new file, or a device or FIFO is not writable.
void check_output_writable(const std::string& path, const std::string& option);
// The same check under its older name (the GUI's save dialog calls it).
inline void check_folder_writable(const std::string& path, const std::string& option) { check_output_writable(path, option); }

// Throws InputError naming `what` (the option and path as the user gave them) and `folder` when no
// file can be created in `folder`.
void check_folder_accepts_files(const std::string& folder, const std::string& what);

}  // namespace hipstudio::captures
