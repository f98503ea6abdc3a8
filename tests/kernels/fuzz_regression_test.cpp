// HiP parameters that fuzz_cli_params (tests/fuzz) found passing validation although the kernels
// cannot run with them, kept as unit tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "kernels/hip_params.h"

namespace hipstudio::hip {
namespace {

// `--bq 9223372036854775807` was valid (b_sq 1 divides it) and overflowed the block count
// (T + b_q - 1) / b_q; every size must stay within int32 like the token positions.
TEST(FuzzRegression, SizesPastInt32AreRejectedNamingTheLimit) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  const int64_t just_past = int64_t{1} << 31;
  struct Case {
    const char* name;
    void (*set)(HipParams&, int64_t);
  };
  const Case cases[] = {
      {"b_q", [](HipParams& p, int64_t v) { p.b_q = v; }},
      {"b_q", [](HipParams& p, int64_t v) { p.b_q = v, p.b_sq = v; }},
      {"k", [](HipParams& p, int64_t v) { p.k = v, p.b_k = v, p.sink = 0; }},
      {"sink", [](HipParams& p, int64_t v) { p.sink = v, p.b_k = 1, p.b_sk = 1; }},
      {"window", [](HipParams& p, int64_t v) { p.window = v, p.b_k = 1, p.b_sk = 1; }},
  };
  for (const Case& c : cases)
    for (const int64_t value : {huge, just_past}) {
      HipParams p;
      c.set(p, value);
      try {
        validate_hip_params(p);
        ADD_FAILURE() << c.name << " = " << value << " was accepted";
      } catch (const HipParamError& e) {
        EXPECT_NE(std::string(e.what()).find("must be at most 2147483647"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
      }
    }
  HipParams largest;  // the limit itself is fine
  largest.b_q = largest.b_sq = std::numeric_limits<int32_t>::max();
  EXPECT_NO_THROW(validate_hip_params(largest));
}

}  // namespace
}  // namespace hipstudio::hip
