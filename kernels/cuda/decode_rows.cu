#include "kernels/cuda/decode_rows.h"

#include <string>

#include "kernels/cuda/common.cuh"

namespace hipstudio::gpu {

namespace {

constexpr int kThreads = 128;

// One block a head. A count outside [0, kb] (a broken mask) is clamped rather than read past the row.
__global__ void decode_rows_kernel(const int32_t* __restrict__ blocks, const int32_t* __restrict__ counts, int heads,
                                   int kb, int tail_room, int tail_start, int32_t* __restrict__ rows,
                                   int32_t* __restrict__ counts_by_extra) {
  const int h = static_cast<int>(blockIdx.x);
  const int count = min(max(counts[h], 0), kb);
  const int width = kb + tail_room;
  for (int c = threadIdx.x; c < width; c += kThreads) {
    int32_t v = -1;
    if (c < count) v = blocks[static_cast<int64_t>(h) * kb + c];
    else if (c < count + tail_room) v = tail_start + (c - count);
    rows[static_cast<int64_t>(h) * width + c] = v;
  }
  for (int e = threadIdx.x; e <= tail_room; e += kThreads) counts_by_extra[static_cast<int64_t>(e) * heads + h] = count + e;
}

}  // namespace

void build_decode_rows(const DecodeRowsLaunch& l) {
  if (!l.blocks || !l.counts || !l.rows || !l.counts_by_extra) throw_arg("build_decode_rows needs all four pointers");
  if (l.heads < 0 || l.heads > (int64_t{1} << 30) || l.kb < 1 || l.tail_room < 0 || l.kb + l.tail_room > (int64_t{1} << 30))
    throw_arg("build_decode_rows: bad shape (heads " + std::to_string(l.heads) + ", kb " + std::to_string(l.kb) +
              ", tail_room " + std::to_string(l.tail_room) + ")");
  if (l.tail_start < 0 || l.tail_start + l.tail_room > INT32_MAX)
    throw_arg("build_decode_rows: tail_start " + std::to_string(l.tail_start) + " outside int32 block ids");
  if (l.heads == 0) return;
  decode_rows_kernel<<<static_cast<unsigned>(l.heads), kThreads, 0, as_stream(l.stream)>>>(
      l.blocks, l.counts, static_cast<int>(l.heads), static_cast<int>(l.kb), static_cast<int>(l.tail_room),
      static_cast<int>(l.tail_start), l.rows, l.counts_by_extra);
  HIP_CUDA_CHECK_LAUNCH("decode_rows");
}

}  // namespace hipstudio::gpu
