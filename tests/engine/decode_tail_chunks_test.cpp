// engine/generation/decode_graph.h's decode_tail_chunks: the tail's graphs cover its layers exactly
// once, in order, the first graph one layer (its launch hides behind the embedding graph), the
// second up to three, every later one holding all the rest (few graph boundaries).
#include "engine/generation/decode_graph.h"

#include <gtest/gtest.h>

namespace hipstudio {
namespace {

TEST(DecodeTailChunks, CoverTheTailInOrderWithASmallFirstChunk) {
  for (const int64_t layers : {1, 2, 4, 5, 6, 32, 80}) {
    for (int64_t from = 0; from < layers; ++from) {
      const auto chunks = decode_tail_chunks(from, layers);
      ASSERT_FALSE(chunks.empty());
      EXPECT_LE(chunks.size(), 3u);
      int64_t next = from;
      for (const auto& [begin, end] : chunks) {
        EXPECT_EQ(begin, next) << "layers " << layers << " from " << from;
        EXPECT_LT(begin, end);
        next = end;
      }
      EXPECT_EQ(next, layers);
      EXPECT_EQ(chunks.front().second - chunks.front().first, 1);
      if (chunks.size() > 1) {
        EXPECT_LE(chunks[1].second - chunks[1].first, 3);
      }
      if (chunks.size() == 3) {
        EXPECT_EQ(chunks[1].second - chunks[1].first, 3);
      }
    }
  }
  EXPECT_EQ(decode_tail_chunks(0, 32), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 4}, {4, 32}}));
}

}  // namespace
}  // namespace hipstudio
