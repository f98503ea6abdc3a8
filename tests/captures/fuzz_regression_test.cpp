// Captures that fuzz_capture (tests/fuzz) found slipping through the reader, kept as unit tests.
// The damage is made consistent (CRC-32s and the manifest's content_sha256 recomputed) so that
// only the value under test is wrong, as a buggy writer or a hand edit would leave it.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "captures/npy.h"
#include "captures/content_hash.h"
#include "captures/zip_store.h"
#include "engine/formats/errors.h"
#include "tests/captures/capture_fixture.h"

namespace hipstudio::captures {
namespace {
using nlohmann::json;

// The archive with `array` (e.g. "locality/L0/stats") changed by edit(values), its hash recomputed.
std::string with_array(const std::string& bytes, const std::string& array, const std::function<void(double*)>& edit) {
  return hipstudio::testing::edited_capture(bytes, {}, array, [&](NpyArray& a) { edit(reinterpret_cast<double*>(a.bytes.data())); });
}

std::string rejection(const std::string& bytes) {
  try {
    decode_capture(bytes, "bad.hipcap");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string& good_capture() {
  static const std::string bytes = encode_capture(hipstudio::testing::synthetic_capture(16));
  return bytes;
}

TEST(FuzzRegression, RehashedCaptureStillLoads) {
  // The helper itself changes nothing when the edit changes nothing.
  EXPECT_EQ(rejection(with_array(good_capture(), "locality/L0/stats", [](double*) {})), "");
}

// Score-locality statistics are doubles; the reader cast delta and pair count to int64 unchecked,
// which is undefined for NaN / huge values and let a NaN or negative pair count through.
TEST(FuzzRegression, LocalityStatsThatAreNotCountsAreRejected) {
  const double bad_values[] = {std::nan(""), -5.0, 1e300, std::numeric_limits<double>::infinity()};
  for (const double bad : bad_values) {
    SCOPED_TRACE(bad);
    const std::string pairs = rejection(with_array(good_capture(), "locality/L0/stats", [&](double* v) { v[1] = bad; }));
    EXPECT_NE(pairs.find("locality/L0/stats"), std::string::npos) << pairs;
    const std::string delta = rejection(with_array(good_capture(), "locality/L0/stats", [&](double* v) { v[0] = bad; }));
    EXPECT_NE(delta.find("disagrees with locality.deltas"), std::string::npos) << delta;
  }
}

// A b_q past int32 passed validation and overflowed (T + b_q - 1) / b_q in the reader.
TEST(FuzzRegression, BlockSizesPastInt32AreRejected) {
  const std::string why = rejection(testing::with_manifest(good_capture(), [](json& m) {
    m["params"]["b_q"] = std::numeric_limits<int64_t>::max();
    m["params"]["b_sq"] = 1;
  }));
  EXPECT_NE(why.find("b_q (9223372036854775807) must be at most 2147483647"), std::string::npos) << why;
}

}  // namespace
}  // namespace hipstudio::captures
