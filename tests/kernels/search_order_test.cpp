// kernels/cuda/search_order.h: the launch order of the HiP searches must visit every (batch,
// head, query block) exactly once, keep a KV group's heads next to each other, start with the last
// (longest) query block, and name each search's output row consistently.
#include "kernels/cuda/search_order.h"

#include <gtest/gtest.h>

#include <vector>

namespace hipstudio {
namespace {

using gpu::search_coords;

TEST(SearchOrder, VisitsEverySearchOnceInGroupMajorOrder) {
  struct Shape {
    int64_t batch, hq, hkv, qbs;
  };
  for (const Shape& sh : {Shape{1, 32, 8, 17}, Shape{3, 6, 6, 5}, Shape{2, 8, 1, 4}, Shape{1, 1, 1, 1}}) {
    const int64_t items = sh.batch * sh.hq * sh.qbs, group = sh.hq / sh.hkv;
    std::vector<int> seen(static_cast<size_t>(items), 0);
    for (int64_t s = 0; s < items; ++s) {
      const auto c = search_coords(s, sh.hq, sh.hkv, sh.qbs);
      ASSERT_TRUE(c.b >= 0 && c.b < sh.batch && c.h >= 0 && c.h < sh.hq && c.qb >= 0 && c.qb < sh.qbs) << s;
      ASSERT_EQ(c.item, (c.b * sh.hq + c.h) * sh.qbs + c.qb);
      ++seen[static_cast<size_t>(c.item)];
      // The heads of one KV group for one query block are consecutive, and the first search of a
      // group's run is its last query block.
      ASSERT_EQ(c.g, c.h / group);
      ASSERT_EQ(c.h % group, s % group);
      ASSERT_EQ(c.h / group, (s / (group * sh.qbs)) % sh.hkv);
      ASSERT_EQ(c.qb, sh.qbs - 1 - (s / group) % sh.qbs);
    }
    for (int v : seen) ASSERT_EQ(v, 1);
  }
}

// Past 2^31 searches or query blocks the 64-bit arithmetic takes over; the same formulas hold.
TEST(SearchOrder, WideShapesFollowTheSameOrder) {
  const int64_t hq = 8, hkv = 2, group = 4, qbs = (int64_t{1} << 31) + 5;
  for (int64_t s : {int64_t{0}, int64_t{7}, int64_t{1} << 31, (int64_t{1} << 33) + 3, 2 * hq * qbs - 1}) {
    const auto c = search_coords(s, hq, hkv, qbs);
    EXPECT_EQ(c.h % group, s % group) << s;
    EXPECT_EQ(c.g, (s / (group * qbs)) % hkv) << s;
    EXPECT_EQ(c.h / group, c.g) << s;
    EXPECT_EQ(c.qb, qbs - 1 - (s / group) % qbs) << s;
    EXPECT_EQ(c.b, s / (group * qbs * hkv)) << s;
    EXPECT_EQ(c.item, (c.b * hq + c.h) * qbs + c.qb) << s;
  }
}

}  // namespace
}  // namespace hipstudio
