#pragma once
// `hipstudio bench model --batch N` (N > 1): N sequences prefilled one by one, then decoded together
// (engine/generation/batched_decode.h), dense and HiP in the same run. The sequences may have
// different prompt lengths (--tokens T1,...,TN). Reports each side's prefill time (all N prompts),
// the batched step's time and tokens/s (N tokens per step), the breakdown columns of one extra run
// synchronized per layer, each side's fraction of its memory floor, and dense / HiP.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/analysis/hip_model_params.h"
#include "engine/model/model.h"
#include "engine/runtime/device.h"

namespace hipstudio::app {

struct BatchBench {
  std::shared_ptr<const Model> model;
  HipModelParams hip;
  std::vector<std::vector<int32_t>> prompts;  // (sequences) each sequence's prompt, of any lengths
  int64_t decode = 0;                         // batched steps timed after the prefills
  int warmup = 0;
  int repeats = 1;
  // Rounds of `decode` steps per run from its one prefill: before each later round the caches go back
  // to the prompts and HiP forgets its decode masks, so every round decodes what the first did (each
  // step's logits are checked to be the first round's, bit for bit); each round is a sample of the
  // decode times.
  int decode_rounds = 1;
};

// The prompt lengths of `--tokens` as bench model takes them: one length T (every one of the
// `batch` sequences has T tokens) or `batch` lengths "T1,T2,...", each in [1, max_tokens]. Throws
// InputError naming --tokens and the fix for anything else (an empty item, a non-integer, a count
// that is neither 1 nor --batch).
std::vector<int64_t> parse_bench_tokens(const std::string& text, int64_t batch, int64_t max_tokens);

// The device's copy bandwidth (bytes/s): a 1 GiB device-to-device copy (read + write), median of 5
// after a warm-up. 0 on the CPU. The decode floors of bench model divide by it.
double device_copy_bandwidth(const RunDevice& run);

// Runs the benchmark and prints its table on stdout. The caller has already checked the context and
// the memory plan of N caches.
void run_batch_bench(const BatchBench& bench);

}  // namespace hipstudio::app
