#include "kernels/hip_params.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "kernels/hip_param_rules.h"

namespace hipstudio::hip {

void validate_hip_params(const HipParams& p) {
  const std::string problem = hip_params_problem(p);
  if (!problem.empty()) throw HipParamError(problem);
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
