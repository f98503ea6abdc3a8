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
  int64_t item;  // (b * hq + h) * qbs + qb: the row of the blocks / counts outputs
};

// s in [0, batch * hq * qbs); hq a multiple of hkv.
HIPSTUDIO_HOST_DEVICE SearchCoords search_coords(int64_t s, int64_t hq, int64_t hkv, int64_t qbs) {
  const int64_t group = hq / hkv;
  SearchCoords c;
  const int64_t hg = s % group;
  s /= group;
  c.qb = qbs - 1 - s % qbs;
  s /= qbs;
  c.h = (s % hkv) * group + hg;
  c.b = s / hkv;
  c.item = (c.b * hq + c.h) * qbs + c.qb;
  return c;
}

}  // namespace hipstudio::gpu
