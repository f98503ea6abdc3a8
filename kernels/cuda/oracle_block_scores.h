#pragma once
// The exact oracle's block scores on CUDA for bf16/f16 inputs (the views' fused route,
// engine/analysis/tensor_layer_views.cpp): for every head h, query block j and key block c,
//   out[h, j, c] = max over the block's sampled rows t (rows j b_q + t b_sq < rows) and the keys
//                  of block c (keys c b_k .. c b_k + b_k - 1 below `keys`) of q_row . k_key,
// formed in tensor-core tiles with float32 accumulation (the bf16/f16 products are exact in float32;
// only the summation order differs from a float32 product), the tile's maximum taken before anything
// leaves the chip. Key blocks past a query block's last row are in none of its search ranges: their
// entries may stay at the caller's fill (-inf) or hold scores of later keys. Plain C++ interface
// (no CUDA headers), like hip_cuda.h.
#include <cstdint>

namespace hipstudio::gpu {

struct OracleBlockScoresLaunch {
  const void* q = nullptr;  // (heads, rows, d) elements at q + h * q_head_stride + row * q_row_stride
  const void* k = nullptr;  // (keys, d) of the heads' KV head, row stride k_row_stride
  int64_t q_head_stride = 0, q_row_stride = 0, k_row_stride = 0;  // in elements, multiples of 8
  bool bf16 = true;         // else f16
  float* out = nullptr;     // (heads, nq, key_blocks) contiguous, filled with -inf by the caller
  int64_t heads = 0, d = 0, rows = 0, keys = 0, key_blocks = 0, nq = 0;
  int64_t first_position = 0;  // position of row 0: block j's rows see keys up to first_position + (j + 1) b_q - 1
  int64_t b_q = 1, b_sq = 1, b_k = 1;
  void* stream = nullptr;   // cudaStream_t; null: the legacy default stream
};

// Whether the kernel takes these shapes: d a multiple of 16 up to 256, 16-byte aligned rows.
bool oracle_block_scores_fits(const OracleBlockScoresLaunch& launch);
void oracle_block_scores(const OracleBlockScoresLaunch& launch);

}  // namespace hipstudio::gpu
