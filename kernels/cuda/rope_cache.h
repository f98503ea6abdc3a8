#pragma once
// The decode step's rotary embedding and KV-cache write as one kernel: one token's fused q/k/v
// projection row in, its rotated queries out, its rotated key and its value written into the cache
// at a position held on the device (so a CUDA graph replays it at every step). Eagerly it was a
// table gather, a multiply, a roll, a multiply-add and two index copies a layer.
// Same arithmetic as engine/model/rope.cpp's rotate_rows in LibTorch: x * cos rounded to the dtype,
// then + roll(x, head_dim / 2) * sin in float32, rounded again. Plain C++ interface (no CUDA headers).
#include <cstdint>

#include "kernels/cuda/hip_cuda.h"

namespace hipstudio::gpu {

struct RopeCacheLaunch {
  const void* qkv = nullptr;          // (n_heads + 2 n_kv_heads) * head_dim contiguous: q heads, k heads, v heads
  const void* table = nullptr;        // (positions, 2, head_dim) contiguous: cos row, sin row (first half negated)
  const int64_t* position = nullptr;  // device scalar: the token's position (a table row and a cache row)
  void* q = nullptr;                  // (n_heads, head_dim) contiguous, rotated
  void* keys = nullptr;               // cache (n_kv_heads, capacity, head_dim), strides below
  void* values = nullptr;
  int64_t keys_head_stride = 0, keys_row_stride = 0, values_head_stride = 0, values_row_stride = 0;
  ElementType dtype = ElementType::kF32;
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  void* stream = nullptr;             // cudaStream_t; null: the legacy default stream
};

// Validates (CudaError) and launches. The kernel trusts the position (inside the table and cache).
// Launched as a programmatic dependent of the kernel before it (sm_90), it waits for that kernel
// before reading anything, and lets the kernel after it start at once: a programmatic dependent
// after it may run its early part beside this kernel and the one before (kernels/cuda/common.cuh).
void rope_cache_write(const RopeCacheLaunch& launch);

}  // namespace hipstudio::gpu
