// The soak's memory verdict (app/gui/harness/soak_growth.h): a leak that raises every loop fails it,
// a level the process reaches and leaves again does not.
#include <gtest/gtest.h>

#include "app/gui/harness/soak_growth.h"

namespace hipstudio::gui {
namespace {

TEST(SoakGrowth, ALeakThatRaisesEveryLoopFails) {
  // 10 MiB a loop over ctest's five loops: the last two keep 30 and 40 MiB, over the 17.3 allowed.
  const std::vector<double> leak{346, 356, 366, 376, 386};
  EXPECT_DOUBLE_EQ(persisting_rss_growth(leak), 30.0);
  EXPECT_TRUE(soak_rss_grew(leak));
  // 4 MiB a loop over a longer soak (twelve loops): 36 MiB kept, over the 15 allowed for 300 MiB.
  std::vector<double> slow;
  for (int i = 0; i < 12; ++i) slow.push_back(300 + 4.0 * i);
  EXPECT_TRUE(soak_rss_grew(slow));
}

TEST(SoakGrowth, ALevelReachedAndLeftPasses) {
  // Eight loops of CI's seed 608799614 run here: one loop 10 MiB up, then back.
  const std::vector<double> measured{356.0, 366.0, 355.2, 355.5, 355.1, 355.4, 354.8, 355.1};
  EXPECT_NEAR(persisting_rss_growth(measured), -1.2, 1e-9);  // the lower of the last two, 354.8
  EXPECT_FALSE(soak_rss_grew(measured));
  // A level that comes and goes: the last loops do not both hold it.
  EXPECT_FALSE(soak_rss_grew({300, 330, 300, 330, 300}));
  // CI's three loops of that seed (346.1, 355.9, 365.9): the end alone is 19.8 MiB up, over the
  // 17.3 allowed, which failed the soak before; the last two loops keep 9.8.
  EXPECT_NEAR(persisting_rss_growth({346.1, 355.9, 365.9}), 9.8, 1e-9);
  EXPECT_FALSE(soak_rss_grew({346.1, 355.9, 365.9}));
}

TEST(SoakGrowth, ShortRunsAndTheAllowance) {
  EXPECT_FALSE(soak_rss_grew({}));
  EXPECT_DOUBLE_EQ(persisting_rss_growth({300}), 0.0);
  EXPECT_DOUBLE_EQ(persisting_rss_growth({300, 320}), 20.0);  // two loops: the last one
  EXPECT_TRUE(soak_rss_grew({300, 320}));
  EXPECT_DOUBLE_EQ(soak_rss_allowance(346.1), 0.05 * 346.1);
  EXPECT_DOUBLE_EQ(soak_rss_allowance(100), 8.0);  // at least 8 MiB
}

}  // namespace
}  // namespace hipstudio::gui
