#pragma once
// Opt-in wall-clock split of a piece of work into named phases, for finding where a slow step's
// time goes on the GPU machine (no profiler there): HIPSTUDIO_PROFILE=1 in the environment turns it
// on. Host code only; phase_profile.h adds the wait for the device's queued work. Never on by
// default: a lap that waits for the device changes the timing it measures a little.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace hipstudio {

class PhaseClock {
 public:
  static bool enabled() {
    static const bool on = [] {
      const char* v = std::getenv("HIPSTUDIO_PROFILE");
      return v && *v && std::string(v) != "0";
    }();
    return on;
  }

  // Starts the clock of the next phase; `wait` (if given) is called before every reading, so work
  // queued elsewhere (a device's) counts in the phase that queued it.
  void begin(void (*wait)() = nullptr) {
    if (!enabled()) return;
    wait_ = wait;
    if (wait_) wait_();
    last_ = std::chrono::steady_clock::now();
  }
  // Adds the time since begin() or the last lap to `phase`.
  void lap(const char* phase) {
    if (!enabled()) return;
    if (wait_) wait_();
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    for (auto& [name, total] : phases_)
      if (name == phase) {
        total += s;
        return;
      }
    phases_.emplace_back(phase, s);
  }
  // One line to stderr: "profile <what>: phase 0.123 s, ... (total 0.456 s)"; then starts over.
  void print(const std::string& what) {
    if (!enabled()) return;
    double total = 0;
    std::string line = "profile " + what + ":";
    for (const auto& [name, s] : phases_) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s %s %.3f s", line.back() == ':' ? "" : ",", name.c_str(), s);
      line += buf;
      total += s;
    }
    std::fprintf(stderr, "%s (total %.3f s)\n", line.c_str(), total);
    phases_.clear();
  }

 private:
  void (*wait_)() = nullptr;
  std::chrono::steady_clock::time_point last_;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace hipstudio
