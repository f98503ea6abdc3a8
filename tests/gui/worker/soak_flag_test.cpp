// `hipstudio --self-test --soak X`: a value that is neither a duration nor a loop count, or --soak
// without --self-test, is an input error (exit 2, a message naming the accepted forms) before any
// window opens, so these run without a display.
#include <gtest/gtest.h>

#include "tests/app/run_hipstudio.h"

namespace hipstudio::gui {
namespace {

TEST(SoakFlag, BadValuesAreInputErrors) {
  for (const char* value : {"5x", "0", "1.5m", "30m5"}) {
    const testing::CommandResult r = testing::run_hipstudio(std::string("--self-test --soak ") + value, true);
    EXPECT_EQ(r.status, 2) << value << ": " << r.out;
    EXPECT_NE(r.out.find("error: --soak"), std::string::npos) << value << ": " << r.out;
    EXPECT_NE(r.out.find("30m, 90s, 2h"), std::string::npos) << value << ": " << r.out;
  }
}

TEST(SoakFlag, NeedsSelfTest) {
  const testing::CommandResult r = testing::run_hipstudio("--soak 3", true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("add --self-test"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hipstudio::gui
