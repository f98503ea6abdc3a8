// The soak's memory verdict (app/gui/harness/soak_growth.h): a leak that raises every loop counts in
// full, a level the process reaches once and leaves does not.
#include <gtest/gtest.h>

#include "app/gui/harness/soak_growth.h"

namespace hipstudio::gui {
namespace {

TEST(SoakGrowth, ALeakRaisesEveryLaterLoop) {
  // 6 MiB a loop over five loops: the last two keep 18 and 24 MiB; the lower counts.
  EXPECT_DOUBLE_EQ(persisting_rss_growth({300, 306, 312, 318, 324}), 18.0);
  EXPECT_DOUBLE_EQ(persisting_rss_growth({300, 310, 320}), 10.0);
}

TEST(SoakGrowth, ALevelLeftAgainDoesNotCount) {
  // CI's seed 608799614, and the same seed's eight loops run here.
  EXPECT_NEAR(persisting_rss_growth({346.1, 355.9, 365.9}), 9.8, 1e-9);
  EXPECT_NEAR(persisting_rss_growth({356.0, 366.0, 355.2, 355.5, 355.1}), -0.9, 1e-9);
  EXPECT_DOUBLE_EQ(persisting_rss_growth({300, 330, 300, 330, 300}), 0.0);
}

TEST(SoakGrowth, ShortRuns) {
  EXPECT_DOUBLE_EQ(persisting_rss_growth({}), 0.0);
  EXPECT_DOUBLE_EQ(persisting_rss_growth({300}), 0.0);
  EXPECT_DOUBLE_EQ(persisting_rss_growth({300, 320}), 20.0);  // two loops: the last one
}

}  // namespace
}  // namespace hipstudio::gui
