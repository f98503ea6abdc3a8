#pragma once
// The progress line of a long command on stderr: percent, seconds since the command started and
// the phase. On a terminal one line is rewritten in place (\r); into a file or pipe each new phase
// gets its own line, so a log shows when every phase began.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace hipstudio::app {

class ProgressLine {
 public:
  explicit ProgressLine(std::string command)
      : command_(std::move(command)), start_(std::chrono::steady_clock::now()), terminal_(isatty(STDERR_FILENO) == 1) {}

  // Returns true (never cancels): the analysis' progress callback.
  bool operator()(double fraction, const std::string& what) {
    if (!terminal_ && what == last_) return true;
    last_ = what;
    std::fprintf(stderr, "%s%s: %3.0f%% %7.1f s  %-40s%s", terminal_ ? "\r" : "", command_.c_str(), fraction * 100.0,
                 seconds(), what.c_str(), terminal_ ? "" : "\n");
    return true;
  }
  // Ends the rewritten line on a terminal.
  void finish() const {
    if (terminal_) std::fprintf(stderr, "\n");
  }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::string command_, last_;
  std::chrono::steady_clock::time_point start_;
  bool terminal_;
};

}  // namespace hipstudio::app
