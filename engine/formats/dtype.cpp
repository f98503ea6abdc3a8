#include "engine/formats/dtype.h"

#include <cstring>

namespace hipstudio {
namespace {

struct DTypeEntry {
  StoredDType dtype;
  const char* name;
  size_t size;
};
// Order matches the enum so dtype_size/dtype_name can index by value.
constexpr DTypeEntry kDTypes[] = {
    {StoredDType::F64, "F64", 8}, {StoredDType::F32, "F32", 4}, {StoredDType::F16, "F16", 2},
    {StoredDType::BF16, "BF16", 2}, {StoredDType::I64, "I64", 8}, {StoredDType::I32, "I32", 4},
    {StoredDType::I16, "I16", 2}, {StoredDType::I8, "I8", 1}, {StoredDType::U8, "U8", 1},
    {StoredDType::BOOL, "BOOL", 1},
};

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Drops the low `shift` bits of `value`, rounding to nearest with ties to even (1 <= shift < 32).
uint32_t shift_round_even(uint32_t value, int shift) {
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  uint32_t kept = value >> shift;
  if (rest > half || (rest == half && (kept & 1u))) ++kept;
  return kept;
}

}  // namespace

size_t dtype_size(StoredDType dtype) { return kDTypes[static_cast<size_t>(dtype)].size; }

const char* dtype_name(StoredDType dtype) { return kDTypes[static_cast<size_t>(dtype)].name; }

std::optional<StoredDType> dtype_from_name(std::string_view name) {
  for (const DTypeEntry& entry : kDTypes)
    if (name == entry.name) return entry.dtype;
  return std::nullopt;
}

const char* supported_dtype_names() { return "F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL"; }

float bf16_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)  // NaN: keep the sign, force a quiet mantissa bit
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  return static_cast<uint16_t>(shift_round_even(bits, 16));
}

float f16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_f16(float value) {
  const uint32_t bits = float_bits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t exponent = (bits >> 23) & 0xffu;
  const uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff)  // inf stays inf; NaN keeps a quiet mantissa bit
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x0200u | (mantissa >> 13) : 0u));
  const int half_exponent = static_cast<int>(exponent) - 127 + 15;
  if (half_exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (half_exponent <= 0) {
    // Subnormal result: value = (1.mantissa) * 2^(half_exponent - 15) in units of 2^-24.
    if (half_exponent < -10) return sign;  // below half the smallest subnormal: rounds to zero
    const uint32_t full = mantissa | 0x800000u;
    // Rounding up to 0x400 lands exactly on the smallest normal, which is the right encoding.
    return static_cast<uint16_t>(sign | shift_round_even(full, 14 - half_exponent));
  }
  // Normal: a carry out of the mantissa bumps the exponent, up to 0x7c00 (inf) as IEEE requires.
  const uint32_t packed = (static_cast<uint32_t>(half_exponent) << 23) | mantissa;
  return static_cast<uint16_t>(sign | shift_round_even(packed, 13));
}

}  // namespace hipstudio
