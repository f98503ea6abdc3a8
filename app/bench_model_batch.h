#pragma once
// `hipstudio bench model --batch N` (N > 1): N sequences prefilled one by one, then decoded together
// (engine/generation/batched_decode.h), dense and HiP in the same run. Reports each side's prefill time
// (all N prompts), the batched step's time and tokens/s (N tokens per step), and dense / HiP.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/analysis/hip_model_params.h"
#include "engine/model/model.h"

namespace hipstudio::app {

struct BatchBench {
  std::shared_ptr<const Model> model;
  HipModelParams hip;
  std::vector<std::vector<int32_t>> prompts;  // (sequences) each sequence's prompt; all the same length
  int64_t decode = 0;                         // batched steps timed after the prefills
  int warmup = 0;
  int repeats = 1;
};

// Runs the benchmark and prints its table on stdout. The caller has already checked the context and
// the memory plan of N caches.
void run_batch_bench(const BatchBench& bench);

}  // namespace hipstudio::app
