#pragma once
// The ranked selection of kernels/methods/torch/tensor_top_blocks.h on CUDA, for rows whose eligible
// columns are one contiguous range: for every row r of scores (rows, n), among its columns
// [lo, min(hi[r % ranges], n)) the `take` largest scores, ties to the lower column, written as the
// ascending column list out[r, 0..take) with -1 after the last; every eligible column where the range
// holds at most `take`. That is ascending_indices(top_with_lower_ties(scores, eligible, take), take)
// entry for entry: the exact oracle's pick of key blocks per query block, and the registry's ranked
// methods' pick of pages or blocks.
//
// One CTA a row: a radix select on the scores' order-preserving bits finds the take-th largest value
// and how many of its ties are taken (a few passes over the range, which stays in L2), then one pass
// in column order writes the list. A tensor-op pass over every (query block, key block) entry cost
// about 0.4 s a layer at 128k tokens. Scores are block maxima of finite products: -0.0 counts as
// +0.0 (as == does); NaN is not expected and has no defined place. Plain C++ interface (no CUDA
// headers), like hip_cuda.h.
#include <cstdint>

namespace hipstudio::gpu {

struct TopInRangesLaunch {
  const void* scores = nullptr;  // (rows, n) contiguous
  bool f64 = false;              // double scores, else float
  int64_t rows = 0, n = 0;       // n below 2^31 (the lists are int32)
  const int64_t* hi = nullptr;   // device, (ranges): row r's range ends before hi[r % ranges]
  int64_t ranges = 1;
  int64_t lo = 0;                // every row's range starts here (>= 0)
  int64_t take = 1;              // >= 1
  int32_t* out = nullptr;        // (rows, take) contiguous
  void* stream = nullptr;        // cudaStream_t; null: the legacy default stream
};

void top_in_ranges(const TopInRangesLaunch& launch);

}  // namespace hipstudio::gpu
