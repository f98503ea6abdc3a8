#pragma once
// Step 4 of MInference's vertical-slash rule (Jiang et al. 2024, MInference 1.0; kernels/methods/
// vslash.h has the rule, vslash.cpp the float64 CPU reference) on CUDA, one thread block per
// (head, query block): the block's selected tokens, V plus {p_i - o : o in S, rows i < tq of the
// block}, restricted to its range's keys [lo b, hi b), as a bitmap in shared memory (each token
// counted once), the count of each b block by popcount, then the top kb = k / b blocks by count
// (descending, ties: lower block), only blocks holding a token, or every block of the range when it
// has at most kb. Counts are integers in [0, b], so the choice is a counting sort: a histogram of
// the counts gives the threshold count and how many blocks at the threshold fit; the blocks are
// then written in ascending order. No float arithmetic: the masks are the reference's exactly.
// b is b_k (vslash's block), so lo = sink / b_k and no chosen block lies inside the sink.
// Plain C++ interface (no CUDA headers), like hip_cuda.h.
#include <cstdint>

namespace hipstudio::gpu {

struct VslashBlocksLaunch {
  const int32_t* row_end = nullptr;         // (tq) visible end p_i of every query row
  const int64_t* hi = nullptr;              // (qbs) each query block's range end, in blocks of b
  const int32_t* vertical = nullptr;        // V of every head, ascending, heads one after another
  const int32_t* vertical_begin = nullptr;  // (hq + 1) head h's V: vertical[vertical_begin[h] .. [h + 1])
  const int32_t* slash = nullptr;           // S (offsets) of every head, likewise
  const int32_t* slash_begin = nullptr;     // (hq + 1)
  int32_t* blocks = nullptr;                // (hq, qbs, kb) receives the chosen blocks, ascending, -1 padded
  int32_t* counts = nullptr;                // (hq, qbs) receives how many blocks each row holds
  int64_t hq = 0, tq = 0, qbs = 0, b_q = 1;
  int64_t b = 1;   // block size in tokens (b_k)
  int64_t lo = 0;  // first candidate block of every query block (sink / b)
  int64_t kb = 1;  // blocks a row keeps at most (k / b)
  int64_t range_tokens = 0;  // keys of the widest range: (max hi - lo) b, the bitmap's size
  int64_t max_slash = 0;     // the largest |S| of a head (|S| x b_q pairs are indexed in int32)
  void* stream = nullptr;  // cudaStream_t; null: the legacy default stream
};

// Whether the kernel takes this shape: the widest range's bitmap and the histogram of b + 1 counts
// fit in the 48 KB of shared memory a block gets without opting in (ranges up to about 380k keys),
// and every token, block and pair index fits in int32. Callers use the tensor ops otherwise.
bool vslash_blocks_fit(const VslashBlocksLaunch& launch);

// Writes blocks and counts; throws std::invalid_argument for a shape vslash_blocks_fit refuses.
void vslash_select_blocks(const VslashBlocksLaunch& launch);

}  // namespace hipstudio::gpu
