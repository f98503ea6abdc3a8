// The rules of kernels/score_logit.h that the attention references read: the logit of a dot product
// (scale, then the soft-cap) and the first key a sliding-window row sees, each against the rule
// written out (the plain 1 / sqrt(d) multiplication, the tanh cap, the key set (p - W, p] of every
// row counted by brute force).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "kernels/score_logit.h"

namespace hipstudio::hip {
namespace {

TEST(ScoreLogit, LogitIsTheScaledDotThenTheCap) {
  const ScoreTransform plain;
  for (int64_t d : {1, 64, 96, 256}) {
    const double s = score_scale(plain, d);
    EXPECT_EQ(s, 1.0 / std::sqrt(static_cast<double>(d))) << d;
    for (double dot : {-31.5, -1.0, 0.0, 0.25, 17.0}) EXPECT_EQ(score_logit(dot, s, plain), dot * s) << d << " " << dot;
  }
  const ScoreTransform gemma{0.0625, 50.0};
  EXPECT_EQ(score_scale(gemma, 256), 0.0625);
  for (double dot : {-900.0, -3.0, 0.0, 12.0, 2000.0}) {
    const double expected = 50.0 * std::tanh(dot * 0.0625 / 50.0);
    EXPECT_EQ(score_logit(dot, 0.0625, gemma), expected) << dot;
    EXPECT_LT(std::abs(score_logit(dot, 0.0625, gemma)), 50.0 + 1e-12) << "the cap bounds the logit";
  }
}

TEST(ScoreLogit, FirstVisibleKeyIsTheWindowsStart) {
  for (int64_t window : {0, 1, 3, 8}) {
    for (int64_t p = 0; p < 20; ++p) {
      // The keys row p sees: j <= p, and j > p - window when there is a window.
      int64_t first = -1;
      for (int64_t j = 0; j <= p && first < 0; ++j)
        if (window == 0 || j > p - window) first = j;
      EXPECT_EQ(first_visible_key(p, window), first) << "position " << p << ", window " << window;
      if (window > 0) {
        EXPECT_EQ(p - first_visible_key(p, window) + 1, std::min<int64_t>(window, p + 1));
      }
    }
  }
}

}  // namespace
}  // namespace hipstudio::hip
