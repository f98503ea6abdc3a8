#pragma once
// The rules that make HiP parameters valid, written once for the CPU reference
// (hip::validate_hip_params) and the CUDA kernels' launch check (gpu::check_hip_params): two copies
// drifted before (the kernels' lost the int32 bounds). Header-only, so the CUDA library uses it
// without linking back into hipstudio_kernels; the rule walk is HIPSTUDIO_HOST_DEVICE (plain data,
// no strings) and only the message is built on the host.
#include <cstdint>
#include <string>

#include "kernels/cuda/host_device.h"
#include "kernels/hip_param_fields.h"
#include "kernels/hip_params.h"

namespace hipstudio::hip {

enum class HipRule : int32_t {
  kNone = 0,      // every rule holds
  kAtLeastOne,    // name >= 1
  kNonNegative,   // name >= 0
  kKAtLeastBk,    // k >= b_k
  kMultiple,      // name % other == 0
  kRhoFraction,   // rho in [0, 1]
  kKbFitsInt32,   // k / b_k <= INT32_MAX
  kFitsInt32,     // name <= INT32_MAX
};

// The first broken rule, the fields it names and their values (POD: device code can hold one).
// `field` (and `other_field` for a rule between two) is what a slider or an option is marked by;
// `name` is the text messages use (hip_field_name, or "k / b_k" for the block count).
struct HipRuleBreak {
  HipRule rule = HipRule::kNone;
  HipField field = HipField::kNone;
  const char* name = "";
  int64_t value = 0;
  HipField other_field = HipField::kNone;
  const char* other = "";
  int64_t other_value = 0;
};

HIPSTUDIO_HOST_DEVICE HipRuleBreak hip_rule_break(HipRule rule, HipField field, int64_t value,
                                                  HipField other_field = HipField::kNone, int64_t other_value = 0) {
  HipRuleBreak b;
  b.rule = rule, b.field = field, b.name = hip_field_name(field), b.value = value;
  b.other_field = other_field, b.other = hip_field_name(other_field), b.other_value = other_value;
  return b;
}

// Rules in the order they are reported: all sizes >= 1, sink and window >= 0, k >= b_k,
// k % b_k == 0, b_k % b_sk == 0, b_q % b_sq == 0, sink and window multiples of b_k, rho in [0, 1],
// and every size at most INT32_MAX (token positions and block indices are int32; a larger size also
// overflows block counts such as (T + b_q - 1) / b_q, found by fuzzing --bq 9223372036854775807).
HIPSTUDIO_HOST_DEVICE HipRuleBreak first_broken_hip_rule(const HipParams& p) {
  using F = HipField;
  const F fields[7] = {F::kK, F::kBq, F::kBk, F::kBsq, F::kBsk, F::kSink, F::kWindow};
  const int64_t sizes[7] = {p.k, p.b_q, p.b_k, p.b_sq, p.b_sk, p.sink, p.window};
  for (int i = 0; i < 5; ++i)
    if (sizes[i] < 1) return hip_rule_break(HipRule::kAtLeastOne, fields[i], sizes[i]);
  for (int i = 5; i < 7; ++i)
    if (sizes[i] < 0) return hip_rule_break(HipRule::kNonNegative, fields[i], sizes[i]);
  if (p.k < p.b_k) return hip_rule_break(HipRule::kKAtLeastBk, F::kK, p.k, F::kBk, p.b_k);
  // (multiple, divisor) pairs; the divisors are >= 1 by now.
  const int multiple_of[5][2] = {{0, 2}, {2, 4}, {1, 3}, {5, 2}, {6, 2}};
  for (const auto& m : multiple_of)
    if (sizes[m[0]] % sizes[m[1]] != 0)
      return hip_rule_break(HipRule::kMultiple, fields[m[0]], sizes[m[0]], fields[m[1]], sizes[m[1]]);
  if (!(p.rho >= 0.0 && p.rho <= 1.0)) return hip_rule_break(HipRule::kRhoFraction, F::kRho, 0);  // also NaN
  if (p.k / p.b_k > INT32_MAX) {
    HipRuleBreak b = hip_rule_break(HipRule::kKbFitsInt32, F::kK, p.k / p.b_k, F::kBk, p.b_k);
    b.name = "k / b_k";
    return b;
  }
  for (int i = 0; i < 7; ++i)
    if (sizes[i] > INT32_MAX) return hip_rule_break(HipRule::kFitsInt32, fields[i], sizes[i]);
  return HipRuleBreak{};
}

// The message a user can act on, e.g. "k (500) must be a multiple of b_k (3)"; "" when valid.
inline std::string hip_params_problem(const HipParams& p) {
  const HipRuleBreak b = first_broken_hip_rule(p);
  const std::string name = b.name, value = std::to_string(b.value);
  const std::string other = std::string(b.other) + " (" + std::to_string(b.other_value) + ")";
  switch (b.rule) {
    case HipRule::kNone: return "";
    case HipRule::kAtLeastOne: return name + " (" + value + ") must be >= 1";
    case HipRule::kNonNegative: return name + " (" + value + ") must be >= 0";
    case HipRule::kKAtLeastBk: return "k (" + value + ") must be >= " + other + ": at least one key block has to be kept";
    case HipRule::kMultiple: return name + " (" + value + ") must be a multiple of " + other;
    case HipRule::kRhoFraction:
      return "rho (" + std::to_string(p.rho) + ") must be in [0, 1] (0 = first, 0.5 = center, 1 = last)";
    case HipRule::kKbFitsInt32: return "k / b_k (" + value + ") must fit in int32";
    case HipRule::kFitsInt32: return name + " (" + value + ") must be at most 2147483647 (token positions are int32)";
  }
  return "invalid HiP parameters";
}

}  // namespace hipstudio::hip
