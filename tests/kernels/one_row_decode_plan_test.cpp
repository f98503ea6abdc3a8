// kernels/cuda/decode_attention.h's plan for the one-row decode attention: every split CTA gets an
// SM of its own, no split is shorter than kOneRowMinSplitKeys estimated keys, a split's share of the
// keys fits one chunk where the chunk's limit allows (one gather round trip), chunks are whole
// multiples of 16 within [16, kOneRowMaxChunkKeys], and a caller's split count is kept.
#include "kernels/cuda/decode_attention.h"

#include <gtest/gtest.h>

namespace hipstudio {
namespace {

using gpu::kOneRowMaxChunkKeys;
using gpu::kOneRowMaxSplits;
using gpu::kOneRowMinSplitKeys;
using gpu::one_row_decode_plan;

void expect_chunk_rules(const gpu::OneRowDecodePlan& p, int64_t est) {
  EXPECT_EQ(p.chunk_keys % 16, 0);
  EXPECT_GE(p.chunk_keys, 16);
  EXPECT_LE(p.chunk_keys, kOneRowMaxChunkKeys);
  const int64_t share = (est + p.splits - 1) / p.splits;
  if (share <= kOneRowMaxChunkKeys) {
    EXPECT_GE(p.chunk_keys, share);       // one chunk: one gather round trip
    EXPECT_LT(p.chunk_keys, share + 16);  // and no more shared memory than that
  } else {
    EXPECT_EQ(p.chunk_keys, kOneRowMaxChunkKeys);
  }
}

TEST(OneRowDecodePlan, AutomaticSplitsGiveEachCtaAnSmAndEnoughKeys) {
  for (const int sms : {108, 132, 144}) {
    for (const int64_t rows : {1, 6, 8, 24, 32, 64, 66}) {
      for (const int64_t est : {1, 40, 98, 162, 290, 590, 1092, 5000, 200000}) {
        SCOPED_TRACE("sms " + std::to_string(sms) + " rows " + std::to_string(rows) + " est " + std::to_string(est));
        const gpu::OneRowDecodePlan p = one_row_decode_plan(rows, est, sms, 0);
        ASSERT_GE(p.splits, 1);
        EXPECT_LE(p.splits, kOneRowMaxSplits);
        EXPECT_LE(rows * p.splits, sms);
        if (p.splits > 1) {
          EXPECT_GE(est / p.splits, kOneRowMinSplitKeys);
        }
        // As many splits as the SMs and the keys allow: one more would break one of the two rules.
        if (p.splits < kOneRowMaxSplits) {
          EXPECT_TRUE(rows * (p.splits + 1) > sms || est / (p.splits + 1) < kOneRowMinSplitKeys);
        }
        expect_chunk_rules(p, est);
      }
    }
  }
}

// The 8B decode's shape (32 query heads, k 512 widened by the cached rows' tail room to 524, b_q 64,
// b_k 2): 4 splits of one 160-key chunk, whose ~85 KB of shared memory (d 128, bf16) fits an H100
// SM beside the q/k/v projection's three blocks of 16 KB (and 1 KB the system keeps for each).
TEST(OneRowDecodePlan, EightBDecodeFitsBesideTheProjection) {
  const gpu::OneRowDecodePlan p = one_row_decode_plan(32, 524 + 64 + 2, 132, 0);
  EXPECT_EQ(p.splits, 4);
  EXPECT_EQ(p.chunk_keys, 160);
  const size_t smem = gpu::one_row_decode_smem_bytes(128, p.chunk_keys, 2);
  EXPECT_EQ(smem, 2u * 160 * 128 * 2 + 2u * 160 * 4 + 4u * 130 * 4);
  EXPECT_LE(smem + 3 * (16384 + 1024) + 1024, 228u * 1024);
}

TEST(OneRowDecodePlan, ForcedSplitsAreKeptUpToTheLimit) {
  for (const int forced : {1, 3, 7, 40, 256, 1000}) {
    const gpu::OneRowDecodePlan p = one_row_decode_plan(8, 290, 132, forced);
    EXPECT_EQ(p.splits, std::min(forced, kOneRowMaxSplits));
    expect_chunk_rules(p, 290);
  }
}

}  // namespace
}  // namespace hipstudio
