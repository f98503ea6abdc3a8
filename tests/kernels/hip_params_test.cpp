// Every HiP parameter rule (kernels/hip_param_rules.h) is enforced, and the message names the broken rule.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/hip_param_rules.h"
#include "kernels/hip_params.h"
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/hip_cuda.h"
#endif

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

// One of each broken rule, including each size past INT32_MAX (the rule the kernels' copy had lost).
std::vector<HipParams> broken_params() {
  std::vector<HipParams> out;
  auto add = [&](const std::function<void(HipParams&)>& change) {
    HipParams p;
    change(p);
    out.push_back(p);
  };
  add([](HipParams& p) { p.k = 0; });
  add([](HipParams& p) { p.window = -2; });
  add([](HipParams& p) { p.k = 2, p.b_k = 4; });
  add([](HipParams& p) { p.k = 500, p.b_k = 3; });
  add([](HipParams& p) { p.b_q = 32, p.b_sq = 5; });
  add([](HipParams& p) { p.rho = std::nan(""); });
  const int64_t big = int64_t{INT32_MAX} + 1;
  add([&](HipParams& p) { p.k = big * 2, p.b_k = 4; });  // k / b_k fits, k does not
  add([&](HipParams& p) { p.b_q = big; p.b_sq = 1; });
  add([&](HipParams& p) { p.k = big, p.b_k = big, p.b_sk = 1; });
  add([&](HipParams& p) { p.b_k = 1, p.b_sk = 1, p.sink = big; });
  add([&](HipParams& p) { p.b_k = 1, p.b_sk = 1, p.window = big; });
  add([](HipParams& p) { p.b_q = INT64_MAX, p.b_sq = 1; });  // the fuzzer's --bq 9223372036854775807
  return out;
}

TEST(HipParams, SharedRulesGiveTheReferenceMessage) {
  for (const HipParams& p : broken_params()) {
    const std::string problem = hip_params_problem(p);
    ASSERT_FALSE(problem.empty());
    EXPECT_NE(first_broken_hip_rule(p).rule, HipRule::kNone) << problem;
    try {
      validate_hip_params(p);
      ADD_FAILURE() << "accepted: " << problem;
    } catch (const HipParamError& e) {
      EXPECT_EQ(e.what(), problem);
    }
  }
  EXPECT_EQ(hip_params_problem(HipParams{}), "");
  HipParams at_limit;  // INT32_MAX itself is allowed
  at_limit.k = INT32_MAX, at_limit.b_k = 1, at_limit.b_sk = 1, at_limit.b_q = INT32_MAX, at_limit.b_sq = 1;
  EXPECT_EQ(hip_params_problem(at_limit), "");
}

TEST(HipParams, SizesPastInt32AreRejected) {
  int past_int32 = 0;
  for (const HipParams& p : broken_params()) {
    if (first_broken_hip_rule(p).rule != HipRule::kFitsInt32) continue;
    ++past_int32;
    EXPECT_NE(hip_params_problem(p).find("must be at most 2147483647"), std::string::npos) << hip_params_problem(p);
  }
  EXPECT_EQ(past_int32, 6);
}

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
// The kernels' entry points check their parameters before touching the device, so this runs
// without a GPU: each rejects what the reference rejects, with the reference's message.
TEST(HipParams, CudaKernelsRejectWhatTheReferenceRejects) {
  for (const HipParams& p : broken_params()) {
    const std::string expected = "HiP CUDA kernels: " + hip_params_problem(p);
    gpu::MaskLaunch mask;
    mask.hip = p;
    gpu::AttentionLaunch attention;
    attention.hip = p;
    const std::pair<const char*, std::function<void()>> launches[] = {
        {"mask estimation", [&] { gpu::launch_estimate_masks(mask); }}, {"sparse attention", [&] { gpu::sparse_attention(attention); }}};
    for (const auto& [name, launch] : launches) {
      try {
        launch();
        ADD_FAILURE() << name << " accepted: " << expected;
      } catch (const gpu::CudaError& e) {
        EXPECT_EQ(e.what(), expected) << name;
      }
    }
  }
}
#endif

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
