#pragma once
// Quest's page scores on CUDA (kernels/methods/quest.cpp has the rule): for every (query head,
// query block, page) the maximum over the block's sampled rows (rows qb * b_q + t * b_sq < tq) of
// the row's bound sum_d max(q_d min_d, q_d max_d), summed in float64 over d ascending from +0.0
// with correctly rounded products and adds (no fused multiply-add): the bits of quest_rule.h's
// quest_bound, so the ranks, ties included, are the CPU reference's. A page whose first key lies
// after the block's last row (in no search range of the block) scores -inf. One thread per page. Plain
// C++ interface (no CUDA headers), like hip_cuda.h.
#include <cstdint>

namespace hipstudio::gpu {

struct QuestBoundLaunch {
  const double* q = nullptr;         // (hq, tq, d) contiguous, the queries widened to float64
  const double* page_min = nullptr;  // (hkv, d, pages) contiguous: each page's elementwise key minimum
  const double* page_max = nullptr;  // (hkv, d, pages) contiguous
  double* score = nullptr;           // (hq, qbs, pages) contiguous: receives the scores
  int64_t hq = 0, hkv = 0, tq = 0, d = 0, pages = 0, qbs = 0, b_q = 1, b_sq = 1;
  int64_t page_size = 1;   // keys a page holds
  int64_t key_offset = 0;  // position of query row 0 (keys before the queries: tk - tq)
  void* stream = nullptr;            // cudaStream_t; null: the legacy default stream
};

void quest_page_scores(const QuestBoundLaunch& launch);

}  // namespace hipstudio::gpu
