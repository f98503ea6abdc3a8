// The ranked selection over column ranges (kernels/methods/torch/tensor_top_blocks.h's
// top_in_ranges) on the CPU, in float64 and float32, against its brute-force definition
// (tests/kernels/top_in_ranges_cases.h); tests/gpu runs its CUDA kernel on the same cases.
#include <gtest/gtest.h>

#include "kernels/methods/torch/tensor_top_blocks.h"
#include "tests/kernels/top_in_ranges_cases.h"

namespace hipstudio::hip {
namespace {

TEST(TopInRanges, ListsAreTheBruteForceRuleInFloat64AndFloat32) {
  for (const testing::TopInRangesCase& c : testing::top_in_ranges_cases()) {
    for (at::ScalarType t : {at::kDouble, at::kFloat}) {
      testing::TopInRangesCase rounded = c;  // the rule over the scores as this dtype holds them
      rounded.scores = c.scores.to(t).to(at::kDouble);
      const at::Tensor want = testing::top_in_ranges_brute(rounded);
      const at::Tensor got = methods::top_in_ranges(c.scores.to(t), c.lo, c.hi, c.take);
      EXPECT_TRUE(at::equal(got, want)) << c.name << (t == at::kFloat ? " float32" : " float64");
    }
  }
}

TEST(TopInRanges, RefusesATakeBelowOneAndMismatchedRanges) {
  const at::Tensor s = at::zeros({1, 3, 5}, at::kDouble);
  EXPECT_THROW(methods::top_in_ranges(s, 0, at::full({3}, 5, at::kLong), 0), std::invalid_argument);
  EXPECT_THROW(methods::top_in_ranges(s, 0, at::full({2}, 5, at::kLong), 2), std::invalid_argument);
  EXPECT_THROW(methods::top_in_ranges(s, -1, at::full({3}, 5, at::kLong), 2), std::invalid_argument);
}

}  // namespace
}  // namespace hipstudio::hip
