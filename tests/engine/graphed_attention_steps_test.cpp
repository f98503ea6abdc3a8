// engine/model/transformer.h's GraphedAttentionSteps, which `bench model` and the gpu tests read
// back: steps without graphed attention (-1) are not counted, and `from` is the lowest layer over
// the counted steps (a run whose refresh steps start the graphs at another layer shows that one).
#include "engine/model/transformer.h"

#include <gtest/gtest.h>

namespace hipstudio {
namespace {

TEST(GraphedAttentionSteps, CountsGraphedStepsAndKeepsTheLowestLayer) {
  GraphedAttentionSteps t;
  EXPECT_EQ(t.steps, 0);
  EXPECT_EQ(t.from, -1);
  t.add(-1);
  EXPECT_EQ(t.steps, 0);
  EXPECT_EQ(t.from, -1);
  for (const int64_t from : {3, -1, 0, 3, -1}) t.add(from);
  EXPECT_EQ(t.steps, 3);
  EXPECT_EQ(t.from, 0);
}

}  // namespace
}  // namespace hipstudio
