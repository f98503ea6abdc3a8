#pragma once
// `hipstudio --self-test --soak 30m|90s|2h|25`: the GUI's soak script. It loops (for a duration or a
// number of loops) through what a long session does: reload the model, change HiP's parameters
// (and try an invalid combination), cancel analyses and generations at random moments, generate,
// export a view, save a capture, reopen it and compare it with the live run, close it. Every run
// that completes is compared with the first uncancelled run of the same parameters. The process's
// resident memory and threads are measured after each loop; the soak fails when the last two loops
// both hold RSS more than 5% (at least 8 MiB) above the first loop's (warm-up: caches, fonts,
// LibTorch and BLAS pools; soak_growth.h) or the thread count grew.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "app/gui/panel.h"

namespace hipstudio::gui {

struct SelfTestStep;  // self_test.h
class Worker;

// How long to soak: a duration ("30m", "90s", "2h", "1h30m") or a number of loops ("25").
struct SoakLimit {
  double seconds = 0;  // > 0: loop until this much time has passed (checked at the end of a loop)
  int loops = 0;       // > 0: exactly this many loops
  std::string text;    // as given, for the report
};

// Throws InputError naming the accepted forms when `value` is none of them.
SoakLimit parse_soak_limit(const std::string& value);

class Soak {
 public:
  Soak(const SoakLimit& limit, const Worker& worker, std::vector<std::unique_ptr<Panel>>& panels);
  ~Soak();  // removes the temporary folder

  // Once, before the loops: the default model and its first run, a warm-up generation.
  std::vector<SelfTestStep> setup_steps();
  // One loop; the driver runs them again while end_loop() says so.
  std::vector<SelfTestStep> loop_steps();
  // At the end of each loop: measures and prints the loop's line; true when another loop is due.
  bool end_loop(bool failed);
  // The final line; returns the number of failed checks (memory or thread growth).
  int finish();

 private:
  struct State;
  std::shared_ptr<State> st_;
};

}  // namespace hipstudio::gui
