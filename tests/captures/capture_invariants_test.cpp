// The capture reader's one invariant check on the synthetic capture: each cross-field invariant,
// broken by an edit that keeps the container sound (CRCs and content hash recomputed), is refused
// naming its field; non-finite values are found at their index.
#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "captures/content_hash.h"
#include "captures/npy.h"
#include "captures/zip_store.h"
#include "engine/formats/errors.h"
#include "tests/captures/capture_fixture.h"

namespace hipstudio::captures {
namespace {
using nlohmann::json;

using hipstudio::testing::edited_capture;

std::string rejection(const std::string& bytes) {
  try {
    decode_capture(bytes, "bad.hipcap");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string& good() {
  static const std::string bytes = encode_capture(hipstudio::testing::synthetic_capture(40));
  return bytes;
}

void expect_field(const std::string& bytes, const std::string& field) {
  const std::string why = rejection(bytes);
  EXPECT_NE(why.find("inconsistent capture: field '" + field + "'"), std::string::npos) << field << ": " << why;
}

template <class T>
std::function<void(NpyArray&)> set(size_t i, T v) {
  return [i, v](NpyArray& a) { reinterpret_cast<T*>(a.bytes.data())[i] = v; };
}

TEST(CaptureInvariants, EachBrokenInvariantIsNamed) {
  EXPECT_EQ(rejection(edited_capture(good(), [](json&) {})), "");
  expect_field(edited_capture(good(), [](json& m) { m["analysis"]["params"]["k"] = 16; }), "analysis.params.k");
  expect_field(edited_capture(good(), [](json& m) { m["analysis"]["dense"]["ppl"] = 2.0; }), "analysis.dense.ppl");
  expect_field(edited_capture(good(), [](json& m) { m["analysis"]["layers"].erase(1); }), "analysis.layers");
  expect_field(edited_capture(good(), [](json& m) { m["params"]["l_d"] = 3; }), "params.l_d");
  expect_field(edited_capture(good(), [](json& m) { m["params"]["r_m"] = 0; }), "params.r_m");
  expect_field(edited_capture(good(), [](json& m) { m["params"]["decode_steps"] = 2; }), "params.decode_steps");
  expect_field(edited_capture(good(), [](json& m) { m["mask_refreshes"] = 1; }), "mask_refreshes");
  expect_field(edited_capture(good(), {}, "masks/L1/hip/dense_from", set<int64_t>(0, -1)), "masks/L1/hip/dense_from");
  expect_field(edited_capture(good(), {}, "masks/L1/hip/dense_from", set<int64_t>(0, 41)), "masks/L1/hip/dense_from");
  expect_field(edited_capture(good(), {}, "masks/L1/hip/branches", set<int64_t>(0, -3)), "masks/L1/hip/branches");
  expect_field(edited_capture(good(), {}, "masks/L1/hip/recall", set<double>(0, 1.5)), "masks/L1/hip/recall");
  expect_field(edited_capture(good(), {}, "locality/L0/counts", set<int64_t>(0, -1)), "locality/L0/counts");
  expect_field(edited_capture(good(), {}, "locality/L0/counts", set<int64_t>(0, 1000)), "locality/L0/counts");
  expect_field(edited_capture(good(), {}, "locality/queries", set<int64_t>(0, 40)), "locality/queries");
  expect_field(edited_capture(good(), {}, "offload/sparse/per_layer", set<int64_t>(0, -1)), "offload/sparse");
  expect_field(edited_capture(good(), {}, "analysis/decode", set<int64_t>(0, 1)), "analysis/decode");
  expect_field(edited_capture(good(), {}, "analysis/layers", set<int64_t>(2, 0)), "analysis/layers");
  expect_field(edited_capture(good(), {}, "methods/hip/nll", set<double>(0, -0.5)), "methods/hip/nll");
  expect_field(edited_capture(good(), {}, "traces/0/header", set<int64_t>(3, 1)), "traces/0/header");
  const std::string nan = rejection(edited_capture(good(), {}, "inputs/L1/v", set<float>(8 + 2, NAN)));
  EXPECT_NE(nan.find("array 'inputs/L1/v': the array holds NaN at index [0, 1, 2]"), std::string::npos) << nan;
}

TEST(NpyFinite, FirstBadElementIsNamedByItsIndex) {
  std::vector<float> v(2 * 3 * 4, 1.0f);
  EXPECT_NO_THROW(require_finite(v.data(), {2, 3, 4}, "x.npy", "mask", "fix it"));
  v[1 * 12 + 2 * 4 + 1] = INFINITY;
  v[23] = NAN;
  try {
    require_finite(v.data(), {2, 3, 4}, "x.npy", "mask", "fix it");
    FAIL() << "not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "x.npy: the array holds +Inf at index [1, 2, 1] (element 21 of 24); mask needs finite values: fix it");
  }
}

}  // namespace
}  // namespace hipstudio::captures
