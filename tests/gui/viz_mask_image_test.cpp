// The max-pooled level-of-detail mask picture must equal a brute-force OR over every cell, for
// random selections, random view rects and random texture sizes, and for real engine masks.
#include <gtest/gtest.h>

#include <random>

#include "kernels/mask_reference.h"
#include "kernels/oracle.h"
#include "kernels/random_baseline.h"
#include "kernels/search_range.h"
#include "viz/mask_image.h"

namespace hipstudio::viz {
namespace {

std::vector<uint8_t> brute_force(const MaskPicture& m, const PoolRect& r) {
  std::vector<uint8_t> out(static_cast<size_t>(r.width) * static_cast<size_t>(r.height), 0);
  const int64_t rows = r.row1 - r.row0, cols = r.col1 - r.col0;
  for (int64_t i = r.row0; i < r.row1; ++i)
    for (int64_t j = r.col0; j < r.col1; ++j) {
      const int64_t y = (i - r.row0) * r.height / rows, x = (j - r.col0) * r.width / cols;
      out[static_cast<size_t>(y * r.width + x)] |= mask_cell_flags(m, i, j);
    }
  return out;
}

std::vector<std::vector<int32_t>> random_lists(std::mt19937_64& rng, const MaskPicture& m, double density) {
  std::vector<std::vector<int32_t>> lists(static_cast<size_t>(m.query_blocks()));
  std::bernoulli_distribution pick(density);
  for (int64_t qb = 0; qb < m.query_blocks(); ++qb) {
    const int64_t p0 = m.position(qb * m.b_q);
    const int64_t hi = m.dense_from[static_cast<size_t>(qb)] / m.b_k;
    for (int64_t b = m.sink / m.b_k; b < hi && b * m.b_k <= p0; ++b)
      if (pick(rng)) lists[static_cast<size_t>(qb)].push_back(static_cast<int32_t>(b));
  }
  return lists;
}

TEST(MaskImage, PooledEqualsBruteForceOnRandomPictures) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    MaskPicture m;
    m.tk = 20 + static_cast<int64_t>(rng() % 300);
    m.tq = trial % 3 == 0 ? m.tk : 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(m.tk));
    m.b_q = 1 + static_cast<int64_t>(rng() % 16);
    m.b_k = 1 + static_cast<int64_t>(rng() % 8);
    m.sink = static_cast<int64_t>(rng() % 3) * m.b_k;
    const int64_t window = static_cast<int64_t>(rng() % 4) * m.b_k;
    const int64_t qbs = (m.tq + m.b_q - 1) / m.b_q;
    for (int64_t qb = 0; qb < qbs; ++qb) {
      const int64_t p0 = m.position(qb * m.b_q);
      const int64_t hi = std::max(m.sink / m.b_k, hip::floor_div(p0 + 1 - window, m.b_k));
      m.dense_from.push_back(hi * m.b_k);
    }
    m.hip = random_lists(rng, m, 0.3);
    m.oracle = random_lists(rng, m, 0.3);
    if (trial % 2) m.random = random_lists(rng, m, 0.2);
    for (int view = 0; view < 5; ++view) {
      PoolRect r;
      r.row0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(m.tq));
      r.row1 = r.row0 + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(m.tq - r.row0));
      r.col0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(m.tk));
      r.col1 = r.col0 + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(m.tk - r.col0));
      r.width = 1 + static_cast<int>(rng() % static_cast<uint64_t>(r.col1 - r.col0));
      r.height = 1 + static_cast<int>(rng() % static_cast<uint64_t>(r.row1 - r.row0));
      ASSERT_EQ(pool_mask_flags(m, r), brute_force(m, r))
          << "trial " << trial << " view " << view << " rect rows [" << r.row0 << "," << r.row1 << ") cols [" << r.col0
          << "," << r.col1 << ") " << r.width << "x" << r.height;
    }
  }
}

TEST(MaskImage, PooledEqualsBruteForceOnEngineMasks) {
  const int64_t T = 300, d = 16;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> q(2 * T * d), k(T * d);
  for (float& x : q) x = n(rng);
  for (float& x : k) x = n(rng);
  hip::AttentionInputs in;
  in.q = q.data();
  in.k = k.data();
  in.hq = 2;
  in.hkv = 1;
  in.tq = in.tk = T;
  in.d = d;
  hip::HipParams p;
  p.k = 32;
  p.b_q = 8;
  p.b_k = 2;
  p.sink = 4;
  p.window = 8;
  const hip::MaskResult hip = hip::estimate_masks_reference(in, p).mask;
  const hip::MaskResult oracle = hip::oracle_masks(in, p);
  const hip::MaskResult rnd = hip::random_masks(in, p, 5);
  for (int64_t head = 0; head < 2; ++head) {
    const MaskPicture m = make_mask_picture(hip, &oracle, &rnd, head, T, T, p);
    for (int side : {300, 257, 100, 37, 1}) {
      const PoolRect full{0, T, 0, T, side, side};
      ASSERT_EQ(pool_mask_flags(m, full), brute_force(m, full)) << side;
    }
    const PoolRect zoom{100, 180, 40, 170, 50, 80};
    ASSERT_EQ(pool_mask_flags(m, zoom), brute_force(m, zoom));
    // The cell definition agrees with the engine's selection.
    for (int64_t qb = 0; qb < hip.query_blocks; ++qb)
      for (int32_t i = 0; i < hip.count(head, qb); ++i) {
        const int64_t key = int64_t{hip.row(head, qb)[i]} * p.b_k;
        EXPECT_TRUE(mask_cell_flags(m, qb * p.b_q, key) & kMaskHip);
      }
  }
}

TEST(MaskImage, RejectsOversizedRects) {
  MaskPicture m;
  m.tq = m.tk = 10;
  m.dense_from.assign(10, 0);
  EXPECT_THROW(pool_mask_flags(m, PoolRect{0, 10, 0, 10, 11, 5}), std::invalid_argument);
  EXPECT_THROW(pool_mask_flags(m, PoolRect{0, 11, 0, 10, 5, 5}), std::invalid_argument);
}

TEST(MaskImage, ColourPriorities) {
  const MaskPalette p = dark_mask_palette();
  EXPECT_EQ(mask_texel_color(0, p), p.future);
  EXPECT_EQ(mask_texel_color(kMaskVisible, p), p.empty);
  EXPECT_EQ(mask_texel_color(kMaskVisible | kMaskHit, p), p.hit);
  EXPECT_EQ(mask_texel_color(kMaskVisible | kMaskHit | kMaskMiss, p), p.miss);  // a miss in a texel shows
  EXPECT_EQ(mask_texel_color(kMaskVisible | kMaskFalsePick, p), p.false_pick);
  EXPECT_EQ(mask_texel_color(kMaskVisible | kMaskSink | kMaskMiss, p), p.sink);
  MaskPalette no_oracle = p;
  no_oracle.show_oracle = false;
  EXPECT_EQ(mask_texel_color(kMaskVisible | kMaskFalsePick, no_oracle), p.selected);
  EXPECT_EQ(mask_texel_color(kMaskVisible | kMaskMiss, no_oracle), p.empty);
  MaskPalette rnd = p;
  rnd.show_random = true;
  EXPECT_EQ(mask_texel_color(kMaskVisible | kMaskRandom, rnd), p.random);
}

}  // namespace
}  // namespace hipstudio::viz
