// Narrowing an access map for drawing (engine/offload/access_map_columns.h) against a brute-force
// reading of the definition: every column holds the worst outcome of exactly its tokens, the
// columns cover every token once, and a map that fits comes back unchanged.
#include <gtest/gtest.h>

#include <random>

#include "engine/offload/access_map_columns.h"

namespace hipstudio::offload {
namespace {

AccessMap random_map(int64_t steps, int64_t tokens, uint32_t seed, double miss_rate) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  AccessMap m;
  m.steps = steps, m.tokens = tokens;
  for (int64_t i = 0; i < steps * tokens; ++i) {
    const double x = u(rng);
    m.cells.push_back(x < miss_rate ? kAccessMiss : x < miss_rate + 0.3 ? kAccessHit : kAccessNone);
  }
  return m;
}

TEST(AccessMapColumns, EachColumnHoldsTheWorstOutcomeOfItsTokens) {
  for (const auto& [tokens, columns] : {std::pair<int64_t, int64_t>{32784, 4096}, {1000, 7}, {4097, 4096}, {50, 1}}) {
    // A sparse miss rate, so that a column with one miss among hits and unread tokens is common.
    const AccessMap m = random_map(4, tokens, static_cast<uint32_t>(tokens + columns), 0.2 / static_cast<double>(tokens / columns + 1));
    const AccessMap n = access_map_columns(m, columns);
    ASSERT_EQ(n.steps, m.steps);
    ASSERT_EQ(n.tokens, columns);
    ASSERT_EQ(n.cells.size(), static_cast<size_t>(m.steps * columns));
    int64_t covered = 0, mixed = 0;
    for (int64_t c = 0; c < columns; ++c) {
      const int64_t a = column_first_token(c, tokens, columns), b = column_first_token(c + 1, tokens, columns);
      ASSERT_LT(a, b) << "column " << c << " covers no token";
      covered += b - a;
      for (int64_t s = 0; s < m.steps; ++s) {
        bool miss = false, hit = false;
        for (int64_t t = a; t < b; ++t) miss |= m.at(s, t) == kAccessMiss, hit |= m.at(s, t) == kAccessHit;
        const uint8_t want = miss ? kAccessMiss : hit ? kAccessHit : kAccessNone;
        ASSERT_EQ(n.at(s, c), want) << "step " << s << " column " << c << " of " << columns;
        mixed += miss && hit;
      }
    }
    EXPECT_EQ(covered, tokens);
    if (tokens / columns >= 8) {
      EXPECT_GT(mixed, 0) << "no column mixed a miss with hits: the case tests little";
    }
  }
}

TEST(AccessMapColumns, AMapThatFitsComesBackUnchangedAndZeroColumnsIsRefused) {
  const AccessMap m = random_map(3, 256, 9, 0.1);
  const AccessMap n = access_map_columns(m, 256);
  EXPECT_EQ(n.tokens, 256);
  EXPECT_EQ(n.cells, m.cells);
  EXPECT_THROW(access_map_columns(m, 0), std::invalid_argument);
}

}  // namespace
}  // namespace hipstudio::offload
