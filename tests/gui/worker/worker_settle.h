#pragma once
// Waits for a worker to finish everything it was asked (idle and not busy), for tests that drive
// the real Worker with the fake engine; null after 60 s.
#include <chrono>
#include <memory>
#include <thread>

#include "app/gui/worker.h"

namespace hipstudio::gui {

inline std::shared_ptr<const Snapshot> settle(const Worker& w) {
  const auto start = std::chrono::steady_clock::now();
  while (!(w.idle() && !w.snapshot()->busy)) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return w.snapshot();
}

}  // namespace hipstudio::gui
