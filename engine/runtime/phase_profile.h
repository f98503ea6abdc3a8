#pragma once
// PhaseClock (phase_clock.h) for device work: each reading first waits for the CUDA work queued so
// far, so a phase's time is the device's too. HIPSTUDIO_PROFILE=1 turns it on.
#include <torch/cuda.h>

#include "engine/runtime/phase_clock.h"

namespace hipstudio {

class PhaseProfile : public PhaseClock {
 public:
  // Starts the clock of the next phase (waiting for the device's work queued so far when `cuda`).
  void begin(bool cuda) { PhaseClock::begin(cuda ? &wait_for_cuda : nullptr); }

 private:
  static void wait_for_cuda() { torch::cuda::synchronize(); }
};

}  // namespace hipstudio
