#pragma once
// Opt-in wall-clock split of a piece of device work into named phases, for finding where a slow
// step's time goes on the GPU machine (no profiler there): HIPSTUDIO_PROFILE=1 in the environment
// turns it on. Each lap waits for the device, so it changes the timing it measures a little and is
// never on by default.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <torch/cuda.h>

namespace hipstudio {

class PhaseProfile {
 public:
  static bool enabled() {
    static const bool on = [] {
      const char* v = std::getenv("HIPSTUDIO_PROFILE");
      return v && *v && std::string(v) != "0";
    }();
    return on;
  }

  // Starts the clock of the next phase (waiting for the device's work queued so far).
  void begin(bool cuda) {
    if (!enabled()) return;
    cuda_ = cuda;
    sync();
    last_ = std::chrono::steady_clock::now();
  }
  // Adds the time since begin() or the last lap to `phase`.
  void lap(const char* phase) {
    if (!enabled()) return;
    sync();
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
  void sync() const {
    if (cuda_) torch::cuda::synchronize();
  }
  bool cuda_ = false;
  std::chrono::steady_clock::time_point last_;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace hipstudio
