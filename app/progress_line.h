#pragma once
// The progress line of a long command on stderr: percent, seconds since the command started and
// the phase. On a terminal one line is rewritten in place (\r); into a file or pipe each new phase
// gets its own line (no \r), so a log shows when every phase began. --quiet prints none.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace hipstudio::app {

class ProgressLine {
 public:
  ProgressLine(std::string command, bool quiet)
      : command_(std::move(command)), start_(std::chrono::steady_clock::now()), terminal_(isatty(STDERR_FILENO) == 1),
        quiet_(quiet) {}
  // An error unwinding past an open terminal line starts on a line of its own.
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Returns true (never cancels): the analysis' progress callback.
  bool operator()(double fraction, const std::string& what) {
    if (quiet_ || (!terminal_ && what == last_)) return true;
    last_ = what;
    std::fprintf(stderr, "%s%s: %3.0f%% %7.1f s  %-40s%s", terminal_ ? "\r" : "", command_.c_str(), fraction * 100.0,
                 seconds(), what.c_str(), terminal_ ? "" : "\n");
    open_ = terminal_;
    return true;
  }
  // Ends the rewritten line on a terminal.
  void finish() {
    if (open_) std::fprintf(stderr, "\n");
    open_ = false;
  }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::string command_, last_;
  std::chrono::steady_clock::time_point start_;
  bool terminal_, quiet_;
  bool open_ = false;
};

}  // namespace hipstudio::app
