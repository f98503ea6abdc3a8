#pragma once
// Where the HiP searches of one launch go, fastest first: head within its KV group, query block
// (the last first: causal searches there are the longest, so they start first and the tail of the
// grid is short), KV group, batch. The CTAs resident at one time then gather from one group's K
// (8 MB at 32k, 32 MB at 128k for Llama-3.1-8B), which L2 holds, instead of from all of K (v3 in
// kernels/BENCHMARKS.md). The mask kernels use this; the attention kernel walks the same order
// (with split and row tile in front) by FastDiv. Plain C++ too: tests/kernels/search_order_test.cpp.
#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace hipstudio::gpu {

struct SearchCoords {
  int64_t b, h, qb;
  int64_t g;     // h's KV head
  int64_t item;  // (b * hq + h) * qbs + qb: the row of the blocks / counts outputs
};

// The order's arithmetic in the integer type U (uint32_t where it fits: a 64-bit division is a
// ~100-instruction routine on the GPU).
template <class U>
HIPSTUDIO_HOST_DEVICE SearchCoords search_coords_in(U s, U group, U hkv, U qbs, int64_t hq) {
  SearchCoords c;
  const U hg = s % group;
  s /= group;
  c.qb = static_cast<int64_t>(qbs - 1 - s % qbs);
  s /= qbs;
  c.g = static_cast<int64_t>(s % hkv);
  c.h = c.g * static_cast<int64_t>(group) + static_cast<int64_t>(hg);
  c.b = static_cast<int64_t>(s / hkv);
  c.item = (c.b * hq + c.h) * static_cast<int64_t>(qbs) + c.qb;
  return c;
}

// s in [0, batch * hq * qbs); hq a multiple of hkv.
HIPSTUDIO_HOST_DEVICE SearchCoords search_coords(int64_t s, int64_t hq, int64_t hkv, int64_t qbs) {
  const int64_t group = hq / hkv;
  if (((s | hq | qbs) >> 31) == 0) {
    return search_coords_in<uint32_t>(static_cast<uint32_t>(s), static_cast<uint32_t>(group),
                                      static_cast<uint32_t>(hkv), static_cast<uint32_t>(qbs), hq);
  }
  return search_coords_in<int64_t>(s, group, hkv, qbs, hq);
}

}  // namespace hipstudio::gpu
