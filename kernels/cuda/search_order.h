#pragma once
// Where the HiP searches of one launch go, fastest first: head within its KV group, query block
// (the last first: causal searches there are the longest, so they start first and the tail of the
// grid is short), KV group, batch. The CTAs resident at one time then gather from one group's K
// (8 MB at 32k, 32 MB at 128k for Llama-3.1-8B), which L2 holds, instead of from all of K (v3 in
// kernels/BENCHMARKS.md). Both mask kernels use this; the attention kernel walks the same order
// (with split and row tile in front) by FastDiv. Plain C++ too: tests/kernels/search_order_test.cpp.
#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace hipstudio::gpu {

struct SearchCoords {
  int64_t b, h, qb;
  int64_t g;     // h's KV head
  int64_t item;  // (b * hq + h) * qbs + qb: the row of the blocks / counts outputs
};

// s in [0, batch * hq * qbs); hq a multiple of hkv.
HIPSTUDIO_HOST_DEVICE SearchCoords search_coords(int64_t s, int64_t hq, int64_t hkv, int64_t qbs) {
  const int64_t group = hq / hkv;
  SearchCoords c;
  if (((s | hq | qbs) >> 31) == 0) {  // 32-bit divisions: a 64-bit one is a ~100-instruction routine on the GPU
    uint32_t u = static_cast<uint32_t>(s);
    const uint32_t ug = static_cast<uint32_t>(group), uq = static_cast<uint32_t>(qbs), uk = static_cast<uint32_t>(hkv);
    const uint32_t hg = u % ug;
    u /= ug;
    c.qb = uq - 1 - u % uq;
    u /= uq;
    c.g = u % uk;
    c.h = c.g * group + hg;
    c.b = u / uk;
    c.item = (c.b * hq + c.h) * qbs + c.qb;
    return c;
  }
  const int64_t hg = s % group;
  s /= group;
  c.qb = qbs - 1 - s % qbs;
  s /= qbs;
  c.g = s % hkv;
  c.h = c.g * group + hg;
  c.b = s / hkv;
  c.item = (c.b * hq + c.h) * qbs + c.qb;
  return c;
}

}  // namespace hipstudio::gpu
