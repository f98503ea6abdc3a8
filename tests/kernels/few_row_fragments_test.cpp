// The few-row scoring's fragments (kernels/cuda/few_row_fragments.h, v17): 32 lanes' ring slots
// and Q pieces laid out as the mask kernels' gathers lay them, turned into A / B fragments k-step by
// k-step, and the m16n8k16 mma emulated from the fragment layout that common.cuh documents (the
// layout the v16 kernels run on). The product must be every key's dot product with every sampled
// row, so a wrong word, piece or k-step mapping fails here instead of on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/few_row_fragments.h"

namespace hipstudio {
namespace {

struct Words {  // a 16-byte piece: 8 bf16 values in 4 words, the lower address in the low half
  uint32_t x, y, z, w;
};

uint16_t to_bf16(float f) {  // exact for the small integers used here
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
float from_half_word(uint32_t word, int e) {
  const uint32_t u = (e ? word >> 16 : word & 0xffffu) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Piece `p` (values 8p .. 8p + 7) of a row.
Words piece(const std::vector<float>& row, int p) {
  uint32_t w[4];
  for (int i = 0; i < 4; ++i)
    w[i] = to_bf16(row[8 * p + 2 * i]) | static_cast<uint32_t>(to_bf16(row[8 * p + 2 * i + 1])) << 16;
  return {w[0], w[1], w[2], w[3]};
}

void expect_fragments_give_dot_products(int d, int rows, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<std::vector<float>> keys(16, std::vector<float>(d)), q(8, std::vector<float>(d, 0.f));
  for (auto& k : keys)
    for (float& x : k) x = static_cast<float>(small(rng));
  for (int r = 0; r < rows; ++r)
    for (float& x : q[r]) x = static_cast<float>(small(rng));  // rows >= R stay zero, as loaded

  std::vector<std::vector<double>> D(16, std::vector<double>(8, 0.0));
  for (int ks = 0; ks < d / 16; ++ks) {
    const int j = ks / 2, h = ks % 2;
    float A[16][16], B[16][8];
    int set_a[16][16] = {}, set_b[16][8] = {};
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, c = lane % 4, p = c + 4 * j;
      uint32_t a[4], b[2];
      gpu::few_row_key_fragment(piece(keys[g], p), piece(keys[g + 8], p), h, a);
      gpu::few_row_query_fragment(piece(q[g], p), h, b);
      for (int e = 0; e < 2; ++e) {  // common.cuh mma16816's layout
        A[g][2 * c + e] = from_half_word(a[0], e), ++set_a[g][2 * c + e];
        A[g + 8][2 * c + e] = from_half_word(a[1], e), ++set_a[g + 8][2 * c + e];
        A[g][2 * c + 8 + e] = from_half_word(a[2], e), ++set_a[g][2 * c + 8 + e];
        A[g + 8][2 * c + 8 + e] = from_half_word(a[3], e), ++set_a[g + 8][2 * c + 8 + e];
        B[2 * c + e][g] = from_half_word(b[0], e), ++set_b[2 * c + e][g];
        B[2 * c + 8 + e][g] = from_half_word(b[1], e), ++set_b[2 * c + 8 + e][g];
      }
    }
    for (int m = 0; m < 16; ++m)
      for (int k = 0; k < 16; ++k) ASSERT_EQ(set_a[m][k], 1) << "A element set once";
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < 8; ++n) ASSERT_EQ(set_b[k][n], 1) << "B element set once";
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n)
        for (int k = 0; k < 16; ++k) D[m][n] += static_cast<double>(A[m][k]) * B[k][n];
  }
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double dot = 0;
      for (int i = 0; i < d; ++i) dot += static_cast<double>(keys[m][i]) * q[n][i];
      EXPECT_EQ(D[m][n], dot) << "key " << m << " row " << n << " d " << d << " rows " << rows;
    }
  }
}

TEST(FewRowFragments, MmaOfTheFragmentsIsEveryKeysDotWithEverySampledRow) {
  std::mt19937_64 rng(17);
  for (int d : {64, 128})
    for (int rows : {1, 3, 8}) expect_fragments_give_dot_products(d, rows, rng);
}

// The async score exchange (kernels/cuda/mask_cluster_kernel.cu) waits for exactly the bytes it
// expects: every branch slot's score must be written once, by the CTA score_owner_cta names, and
// each CTA must receive as many as it counts. A miscount would hang the cluster or let it read a
// score before it lands. Senders walk their tiles as the kernel does (warp w of CTA r: tiles
// r * 16 + w, then every ctas * 16).
TEST(FewRowFragments, EveryBranchScoreIsWrittenOnceByTheCtaTheReceiversCountOn) {
  for (int kpr_log2 = 0; kpr_log2 <= 3; ++kpr_log2) {
    for (int kb = 1; kb <= 256; ++kb) {
      for (int ctas : {1, 2, 4}) {
        const int slots = 2 * kb, pairs = slots << kpr_log2, tiles = (pairs + 15) / 16;
        std::vector<int> writes(slots, 0), received(ctas, 0), expected(ctas, 0);
        for (int rank = 0; rank < ctas; ++rank) {
          for (int warp = 0; warp < 16; ++warp) {
            for (int t = rank * 16 + warp; t < tiles; t += ctas * 16) {
              for (int lane = 0; lane < 32; ++lane) {
                const int first = gpu::few_row_writer_key(lane, kpr_log2);
                if (first < 0) continue;
                for (const int p : {t * 16 + first, t * 16 + first + 8}) {
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
