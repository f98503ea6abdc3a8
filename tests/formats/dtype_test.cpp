// bf16 / f16 conversions against known bit patterns, exhaustive round trips, and a brute-force check
// that float -> half picks the nearest representable value (ties to even).
#include "engine/formats/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace hipstudio {
namespace {

float from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TEST(StoredDType, NamesSizesAndLookup) {
  for (StoredDType dtype : {StoredDType::F64, StoredDType::F32, StoredDType::F16, StoredDType::BF16, StoredDType::I64, StoredDType::I32, StoredDType::I16,
                      StoredDType::I8, StoredDType::U8, StoredDType::BOOL}) {
    ASSERT_EQ(dtype_from_name(dtype_name(dtype)), dtype) << dtype_name(dtype);
  }
  EXPECT_EQ(dtype_size(StoredDType::F64), 8u);
  EXPECT_EQ(dtype_size(StoredDType::BF16), 2u);
  EXPECT_EQ(dtype_size(StoredDType::I32), 4u);
  EXPECT_EQ(dtype_size(StoredDType::BOOL), 1u);
  EXPECT_STREQ(dtype_name(StoredDType::BF16), "BF16");
  EXPECT_FALSE(dtype_from_name("F8_E4M3").has_value());
  EXPECT_FALSE(dtype_from_name("f32").has_value());  // safetensors spelling is upper case
}

TEST(StoredDType, Bf16KnownBits) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808000)), 0x3F80);  // tie, rounds to the even 0x3F80
  EXPECT_EQ(float_to_bf16(from_bits(0x3F818000)), 0x3F82);  // tie, rounds up to the even 0x3F82
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(float_to_bf16(from_bits(0x7F7FFFFF)), 0x7F80);  // FLT_MAX rounds to infinity
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
  EXPECT_EQ(bf16_to_float(0xFF80), -INFINITY);
}

TEST(StoredDType, F16KnownBits) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_f16(0.1f), 0x2E66);
  EXPECT_EQ(float_to_f16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7BFF);        // largest finite half
  EXPECT_EQ(float_to_f16(65519.0f), 0x7BFF);        // below the midpoint to infinity
  EXPECT_EQ(float_to_f16(65520.0f), 0x7C00);        // the midpoint ties to even = infinity
  EXPECT_EQ(float_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even = 0
  EXPECT_EQ(float_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: tie to even = 2
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16(-INFINITY), 0xFC00);
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(NAN))));
  EXPECT_EQ(f16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_float(0x03FF), 1023.0f * std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_float(0xC248), -3.140625f);
  EXPECT_EQ(f16_to_float(0x7C00), INFINITY);
}

// Every non-NaN 16-bit pattern survives half -> float -> half.
TEST(StoredDType, ExhaustiveRoundTrip) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f16 = f16_to_float(h);
    if (!std::isnan(f16)) {
      ASSERT_EQ(float_to_f16(f16), h) << std::hex << bits;
    }
    const float bf16 = bf16_to_float(h);
    if (!std::isnan(bf16)) {
      ASSERT_EQ(float_to_bf16(bf16), h) << std::hex << bits;
    }
  }
}

// float -> half must return the nearest half (in double arithmetic), the even one on ties.
TEST(StoredDType, ConversionPicksNearest) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  auto check = [](float x, uint16_t got, float (*to_float)(uint16_t)) {
    const double err = std::fabs(static_cast<double>(to_float(got)) - x);
    for (int delta : {-1, 1}) {
      const auto neighbour = static_cast<uint16_t>(got + delta);
      const float n = to_float(neighbour);
      if (std::isnan(n) || std::signbit(n) != std::signbit(to_float(got))) continue;
      const double n_err = std::fabs(static_cast<double>(n) - x);
      if (n_err < err || (n_err == err && (got & 1))) return false;
    }
    return true;
  };
  for (int i = 0; i < 200000; ++i) {
    const float x = from_bits(any_bits(rng));
    if (std::isnan(x)) continue;
    const uint16_t bf = float_to_bf16(x);
    if (!std::isinf(bf16_to_float(bf))) {
      ASSERT_TRUE(check(x, bf, bf16_to_float)) << x;
    }
    // Halves cover only |x| < 65520; draw values in range so the test exercises rounding.
    const float y = std::ldexp(std::fmod(std::fabs(x), 2.0f) * (x < 0 ? -1.f : 1.f), static_cast<int>(i % 42) - 26);
    if (std::isnan(y) || std::isinf(y)) continue;
    const uint16_t h = float_to_f16(y);
    if (!std::isinf(f16_to_float(h))) {
      ASSERT_TRUE(check(y, h, f16_to_float)) << y;
    }
  }
}

}  // namespace
}  // namespace hipstudio
