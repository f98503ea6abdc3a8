// Every parameter rule of issue 3 is enforced, and the message names the broken rule.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "kernels/hip_params.h"

namespace hipstudio::hip {
namespace {

// Expects validate_hip_params to throw HipParamError whose message contains `needle`.
void expect_rejected(const std::function<void(HipParams&)>& change, const std::string& needle) {
  HipParams p;
  change(p);
  try {
    validate_hip_params(p);
    FAIL() << "accepted parameters that break: " << needle;
  } catch (const HipParamError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(HipParams, DefaultsAndPaperSettingsAreValid) {
  EXPECT_NO_THROW(validate_hip_params(HipParams{}));
  HipParams healing;  // the paper's healing run: b_q 64, b_sq 2, b_sk 1, sink 16, window 256
  healing.b_q = 64, healing.b_sq = 2, healing.sink = 16, healing.window = 256;
  EXPECT_NO_THROW(validate_hip_params(healing));
}

TEST(HipParams, KMustBeAMultipleOfBk) {
  expect_rejected([](HipParams& p) { p.k = 500, p.b_k = 3; }, "k (500) must be a multiple of b_k (3)");
}

TEST(HipParams, BkMustBeAMultipleOfBsk) {
  expect_rejected([](HipParams& p) { p.b_k = 4, p.b_sk = 3; }, "b_k (4) must be a multiple of b_sk (3)");
}

TEST(HipParams, BqMustBeAMultipleOfBsq) {
  expect_rejected([](HipParams& p) { p.b_q = 32, p.b_sq = 5; }, "b_q (32) must be a multiple of b_sq (5)");
}

TEST(HipParams, SinkMustBeAMultipleOfBk) {
  expect_rejected([](HipParams& p) { p.b_k = 4, p.sink = 6; }, "sink (6) must be a multiple of b_k (4)");
}

TEST(HipParams, WindowMustBeAMultipleOfBk) {
  expect_rejected([](HipParams& p) { p.b_k = 4, p.window = 10; }, "window (10) must be a multiple of b_k (4)");
}

TEST(HipParams, EverySizeMustBeAtLeastOne) {
  expect_rejected([](HipParams& p) { p.k = 0; }, "k (0) must be >= 1");
  expect_rejected([](HipParams& p) { p.b_q = 0; }, "b_q (0) must be >= 1");
  expect_rejected([](HipParams& p) { p.b_k = -2; }, "b_k (-2) must be >= 1");
  expect_rejected([](HipParams& p) { p.b_sq = 0; }, "b_sq (0) must be >= 1");
  expect_rejected([](HipParams& p) { p.b_sk = 0; }, "b_sk (0) must be >= 1");
  expect_rejected([](HipParams& p) { p.sink = -2; }, "sink (-2) must be >= 0");
  expect_rejected([](HipParams& p) { p.window = -2; }, "window (-2) must be >= 0");
}

TEST(HipParams, KMustHoldAtLeastOneBlock) {
  expect_rejected([](HipParams& p) { p.k = 2, p.b_k = 4; }, "k (2) must be >= b_k (4)");
}

TEST(HipParams, RhoMustBeAFraction) {
  expect_rejected([](HipParams& p) { p.rho = 1.5; }, "rho");
  expect_rejected([](HipParams& p) { p.rho = -0.1; }, "rho");
  expect_rejected([](HipParams& p) { p.rho = std::nan(""); }, "rho");
}

TEST(HipParams, ParseRepr) {
  EXPECT_EQ(parse_repr("center"), 0.5);
  EXPECT_EQ(parse_repr("first"), 0.0);
  EXPECT_EQ(parse_repr("last"), 1.0);
  EXPECT_EQ(parse_repr("0.25"), 0.25);
  EXPECT_EQ(parse_repr("1"), 1.0);
  for (const char* bad : {"middle", "", "0.5x", "1.5", "-0.1", "nan", "inf"}) {
    EXPECT_THROW(parse_repr(bad), HipParamError) << bad;
  }
  try {
    parse_repr("middle");
  } catch (const HipParamError& e) {
    EXPECT_NE(std::string(e.what()).find("center, first, last"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hipstudio::hip
