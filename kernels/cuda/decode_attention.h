#pragma once
// The one-row decode attention (kernels/cuda/decode_attention.cu): HiP's attention for one query
// row per (batch, head), a decode step of few sequences. sparse_attention() hands it the bf16/f16
// launches of one query row (tq 1) when the rows need at most half the GPU's multiprocessors; the
// tensor-core kernel (sparse_attention.cu) keeps the rest. Plain C++ (no CUDA headers): the plan
// below is tested on the CPU.
//
// Why another kernel (kernels/BENCHMARKS.md, "sixth session"): the tensor-core kernel spends ~10 us
// on a 128k batch-1 step of 32 heads (288 CTAs of one 64-key tile each, 3 an SM, 168 registers),
// a chain of dependent latencies (block ids, gathers, a tile, the split merge through global
// memory). Here each CTA stages all of its split's keys in shared memory at once (one gather round
// trip), with few registers and ~85 KB of shared memory, so that one CTA an SM fits beside the q/k/v
// projection before it (which lets its dependents start at once): in a decode graph the block ids
// and the gathers of the older keys then run during that projection, and only the new key, Q, the
// arithmetic and the merge of a few splits are left after it.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

struct AttnArgs;

// Splits of each row's key list and the keys a CTA stages at once (its shared memory).
struct OneRowDecodePlan {
  int splits = 1;
  int chunk_keys = 16;
};

constexpr int kOneRowMinSplitKeys = 32;   // no split shorter than this (est_keys / splits)
constexpr int kOneRowMaxChunkKeys = 256;  // 128 KB of K and V rows at d 128 in bf16: one CTA an SM
constexpr int kOneRowMaxSplits = 256;     // the split merge's limit, as the tensor-core kernel's

// rows: batch x query heads; est_keys: the longest key list a row may have (sink + the mask's
// blocks + window + the dense tail's bound); sms: the device's multiprocessors; forced_splits > 0:
// the caller's split count (tests), capped at kOneRowMaxSplits. Automatic splits give every CTA an
// SM of its own (rows x splits <= sms, when rows <= sms), each split at least kOneRowMinSplitKeys
// keys; chunk_keys covers a split's share of est_keys in one chunk where it fits kOneRowMaxChunkKeys
// (a multiple of 16; longer splits loop over chunks).
inline OneRowDecodePlan one_row_decode_plan(int64_t rows, int64_t est_keys, int sms, int forced_splits) {
  OneRowDecodePlan p;
  const int64_t keys = std::max<int64_t>(1, est_keys);
  if (forced_splits > 0) {
    p.splits = std::min(forced_splits, kOneRowMaxSplits);
  } else {
    const int64_t by_gpu = std::max<int64_t>(1, sms / std::max<int64_t>(1, rows));
    const int64_t by_keys = std::max<int64_t>(1, keys / kOneRowMinSplitKeys);
    p.splits = static_cast<int>(std::min<int64_t>({by_gpu, by_keys, kOneRowMaxSplits}));
  }
  const int64_t share = (keys + p.splits - 1) / p.splits;
  p.chunk_keys = static_cast<int>(std::clamp<int64_t>((share + 15) / 16 * 16, 16, kOneRowMaxChunkKeys));
  return p;
}

// Shared memory of one CTA: the staged K and V rows (d_pad elements each), the chunk's keys and
// scores, and the four warps' partial rows.
inline size_t one_row_decode_smem_bytes(int d_pad, int chunk_keys, size_t elem_bytes) {
  return 2 * static_cast<size_t>(chunk_keys) * d_pad * elem_bytes + 2 * static_cast<size_t>(chunk_keys) * 4 +
         4 * (static_cast<size_t>(d_pad) + 2) * 4;
}

// Launches grid (splits, hq, batch) of 128-thread CTAs; d_pad is 64 or 128 (>= a.d); a.splits and
// the merge buffers (a.part_o, a.part_ml, a.done where splits > 1) are set. after_prior: launched as
// a programmatic dependent (AttentionLaunch::mask_before_prior_kernel).
void launch_one_row_decode(const AttnArgs& a, DType dtype, int d_pad, int chunk_keys, int64_t batch, void* stream,
                           bool after_prior);

}  // namespace hipstudio::gpu
