// Who writes which branch score (kernels/cuda/score_exchange.h): within a scored tile, the lane
// tile_writer_key names; within a cluster, the CTA score_owner_cta names. The async score exchange
// counts on both, so a miscount is caught here instead of hanging a cluster on a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/score_exchange.h"

namespace hipstudio {
namespace {

// The async score exchange (kernels/cuda/mask_cluster_kernel.cu) waits for exactly the bytes it
// expects: every branch slot's score must be written once, by the CTA score_owner_cta names, and
// each CTA must receive as many as it counts. A miscount would hang the cluster or let it read a
// score before it lands. Senders walk their tiles as the kernel does (warp w of CTA r: tiles
// r * 16 + w, then every ctas * 16).
TEST(ScoreExchange, EveryBranchScoreIsWrittenOnceByTheCtaTheReceiversCountOn) {
  for (int kpr_log2 = 0; kpr_log2 <= 3; ++kpr_log2) {
    for (int kb = 1; kb <= 256; ++kb) {
      for (int ctas : {1, 2, 4}) {
        const int slots = 2 * kb, pairs = slots << kpr_log2, tiles = (pairs + 15) / 16;
        std::vector<int> writes(slots, 0), received(ctas, 0), expected(ctas, 0);
        for (int rank = 0; rank < ctas; ++rank) {
          for (int warp = 0; warp < 16; ++warp) {
            for (int t = rank * 16 + warp; t < tiles; t += ctas * 16) {
              for (int lane = 0; lane < 32; ++lane) {
                const int first = gpu::tile_writer_key(lane, kpr_log2);
                if (first < 0) continue;
                const int p = t * 16 + first;
                if (p >= pairs) continue;
                const int slot = p >> kpr_log2;
                ASSERT_EQ(p & ((1 << kpr_log2) - 1), 0) << "a branch's first key";
                ASSERT_EQ(gpu::score_owner_cta(slot, kpr_log2, ctas), rank);
                ++writes[slot];
                for (int r = 0; r < ctas; ++r) received[r] += r != rank;
              }
            }
          }
        }
        for (int slot = 0; slot < slots; ++slot) {
          ASSERT_EQ(writes[slot], 1) << "slot " << slot << " kb " << kb << " kpr_log2 " << kpr_log2 << " ctas " << ctas;
          for (int r = 0; r < ctas; ++r) expected[r] += gpu::score_owner_cta(slot, kpr_log2, ctas) != r;
        }
        ASSERT_EQ(received, expected) << "kb " << kb << " kpr_log2 " << kpr_log2 << " ctas " << ctas;
      }
    }
  }
}

}  // namespace
}  // namespace hipstudio
