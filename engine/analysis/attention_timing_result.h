#pragma once
// One attention layer timed on the device: HiP (mask estimation, sparse attention) against the
// fastest dense kernel for the same shapes, prefill and a decode step, as medians of repeated
// CUDA-event timings after a warm-up with the two sides interleaved (engine/backends/attention_timing.h).
// Plain data: the GUI's Latency panel reads it.
#include <cstdint>
#include <string>

namespace hipstudio {

struct TimedMs {
  double median = 0;  // milliseconds
  double spread = 0;  // half the interquartile range
  int repeats = 0;
};

struct AttentionTiming {
  int64_t layer = -1;        // the layer whose inputs were timed; -1: synthetic inputs of the model's shapes
  int64_t tokens = 0;        // keys (and prefill queries)
  int64_t heads = 0, kv_heads = 0, dim = 0;
  std::string device;        // e.g. "NVIDIA H100 80GB HBM3"
  std::string dtype;         // e.g. "BFloat16"
  int warmup = 0;
  std::string dense_prefill_backend, dense_decode_backend;  // the fastest that ran these shapes
  TimedMs prefill_mask, prefill_sparse, prefill_dense;
  // A decode step of one query at the last position: with a mask refresh, with the cached mask.
  TimedMs decode_mask, decode_sparse, decode_dense;

  double prefill_hip() const { return prefill_mask.median + prefill_sparse.median; }
  double refresh_step() const { return decode_mask.median + decode_sparse.median; }
  double cached_step() const { return decode_sparse.median; }
  static double ratio(double dense, double hip) { return hip > 0 ? dense / hip : 0.0; }
};

}  // namespace hipstudio
