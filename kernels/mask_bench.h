#pragma once
// `hipstudio bench mask --device cpu`: how the CPU reference's mask estimation scales with T
// compared with dense score computation (Q K^T, causal), on synthetic Gaussian Q/K of one head.
// Kernel-lab style: the timed code is the reference itself; this file only builds inputs, times,
// and extrapolates the dense cost from a sample of query blocks.
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/hip_params.h"

namespace hipstudio::hip {

struct MaskBenchOptions {
  std::vector<int64_t> tokens = {1024, 4096, 16384, 65536};  // T (= tq = tk)
  int64_t dim = 128;             // head dimension
  HipParams params;              // k = 512, b_q = 32, b_k = 2 by default
  int threads = 1;               // for the full-mask estimate (dense is always one thread)
  int64_t dense_blocks = 8;      // query blocks (b_q rows each) timed for the dense estimate
  int single_repeats = 15;       // runs of the single (head, block) + trace timing; the median is kept
  uint64_t seed = 1;
};

struct MaskBenchRow {
  int64_t tokens = 0;
  // Times are CPU seconds of the benchmark thread (robust on a shared machine), except
  // mask_seconds with threads != 1, which is wall time.
  double mask_seconds = 0;         // estimate_masks_reference over all query blocks of one head
  int64_t branches = 0;            // branches scored in that run
  double dense_seconds = 0;        // all causal q.k scores of the head (extrapolated, see below)
  double dense_sampled_fraction = 0;  // share of the dense work actually timed (1 = all of it)
  double single_ms = 0;            // trace_block_mask of the last query block (largest range), median
  int32_t single_iterations = 0;   // iterations of that block
};

// Runs every T in order and calls on_row after each (so a table can be printed as it goes).
// Dense cost: dense_blocks query blocks evenly spread over T are scored against all their causal
// keys with the same float64 dot kernel the mask uses; time x (total dots / timed dots).
std::vector<MaskBenchRow> run_mask_bench(const MaskBenchOptions& opt,
                                         const std::function<void(const MaskBenchRow&)>& on_row = {});

}  // namespace hipstudio::hip
