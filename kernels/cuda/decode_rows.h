#pragma once
// A refreshed decode mask laid out for the cached steps that follow it (engine/backends/hip_attention.cpp),
// in one launch: a refresh built these with eight small LibTorch kernels, and every cached step
// added the tail blocks passed since the refresh to the counts with one more, a few microseconds a
// launch in every HiP layer of a step. Plain C++ interface (no CUDA headers), like row_gemv.h.
//
// Row h of `rows` holds head h's selected key blocks (the first counts[h] of its mask row, ascending),
// then tail_start, tail_start + 1, ... (tail_room blocks of the dense tail, all above the selection),
// then -1. A cached step whose query's tail starts `extra` blocks past tail_start attends the first
// counts[h] + extra entries: row `extra` of counts_by_extra, so it needs no launch of its own.
#include <cstdint>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

struct DecodeRowsLaunch {
  const int32_t* blocks = nullptr;    // (heads, kb): the refresh's mask rows
  const int32_t* counts = nullptr;    // (heads): entries of each row, in [0, kb]
  int64_t heads = 0, kb = 0, tail_room = 0;
  int64_t tail_start = 0;             // first key block of the dense tail at the refresh
  int32_t* rows = nullptr;            // (heads, kb + tail_room)
  int32_t* counts_by_extra = nullptr; // (tail_room + 1, heads): counts[h] + e in row e
  void* stream = nullptr;             // cudaStream_t; null: the legacy default stream
};

// Validates (CudaError) and launches.
void build_decode_rows(const DecodeRowsLaunch& launch);

}  // namespace hipstudio::gpu
