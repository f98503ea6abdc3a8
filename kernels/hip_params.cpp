#include "kernels/hip_params.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

namespace hipstudio::hip {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

void require_at_least_one(const char* name, int64_t v) {
  if (v < 1) throw HipParamError(std::string(name) + " (" + num(v) + ") must be >= 1");
}

void require_multiple(const char* a_name, int64_t a, const char* b_name, int64_t b) {
  if (a % b != 0) {
    throw HipParamError(std::string(a_name) + " (" + num(a) + ") must be a multiple of " + b_name +
                        " (" + num(b) + ")");
  }
}

}  // namespace

void validate_hip_params(const HipParams& p) {
  require_at_least_one("k", p.k);
  require_at_least_one("b_q", p.b_q);
  require_at_least_one("b_k", p.b_k);
  require_at_least_one("b_sq", p.b_sq);
  require_at_least_one("b_sk", p.b_sk);
  if (p.sink < 0) throw HipParamError("sink (" + num(p.sink) + ") must be >= 0");
  if (p.window < 0) throw HipParamError("window (" + num(p.window) + ") must be >= 0");
  if (p.k < p.b_k) {
    throw HipParamError("k (" + num(p.k) + ") must be >= b_k (" + num(p.b_k) +
                        "): at least one key block has to be kept");
  }
  require_multiple("k", p.k, "b_k", p.b_k);
  require_multiple("b_k", p.b_k, "b_sk", p.b_sk);
  require_multiple("b_q", p.b_q, "b_sq", p.b_sq);
  require_multiple("sink", p.sink, "b_k", p.b_k);
  require_multiple("window", p.window, "b_k", p.b_k);
  if (!(p.rho >= 0.0 && p.rho <= 1.0)) {  // also rejects NaN
    throw HipParamError("rho (" + std::to_string(p.rho) +
                        ") must be in [0, 1] (0 = first, 0.5 = center, 1 = last)");
  }
  // Block indices are stored as int32 (mask.npy, the CUDA kernels): keep Kb in range.
  if (p.k / p.b_k > INT32_MAX) throw HipParamError("k / b_k (" + num(p.k / p.b_k) + ") must fit in int32");
  // Token positions are int32 too; a larger size also overflows block counts such as
  // (T + b_q - 1) / b_q (found by fuzzing --bq 9223372036854775807).
  const std::pair<const char*, int64_t> sizes[] = {{"k", p.k},       {"b_q", p.b_q},   {"b_k", p.b_k},
                                                   {"b_sq", p.b_sq}, {"b_sk", p.b_sk}, {"sink", p.sink},
                                                   {"window", p.window}};
  for (const auto& [name, value] : sizes)
    if (value > INT32_MAX)
      throw HipParamError(std::string(name) + " (" + num(value) + ") must be at most 2147483647 (token positions are int32)");
}

double parse_repr(const std::string& text) {
  if (text == "center") return 0.5;
  if (text == "first") return 0.0;
  if (text == "last") return 1.0;
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || !std::isfinite(v)) {
    throw HipParamError("representative '" + text +
                        "' is not one of center, first, last or a fraction in [0, 1] such as 0.25");
  }
  if (v < 0.0 || v > 1.0) {
    throw HipParamError("representative fraction " + text + " must be in [0, 1] (0 = first, 1 = last)");
  }
  return v;
}

}  // namespace hipstudio::hip
