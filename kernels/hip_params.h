#pragma once
// HiP parameters (paper section 3.1-3.2, appendix D.4) and the rules that make them valid.
// A POD struct so that the CUDA kernels can take the very same values the CPU reference takes.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace hipstudio::hip {

struct HipParams {
  int64_t k = 512;      // top-k budget in tokens; k / b_k key blocks are kept per query block
  int64_t b_q = 32;     // query block size (rows that share one mask)
  int64_t b_k = 2;      // key block size (the unit the search selects)
  int64_t b_sq = 1;     // stride over the query rows when scoring a branch
  int64_t b_sk = 1;     // stride over the keys of a representative block when scoring a branch
  int64_t sink = 0;     // S: keys [0, S) are always attended (StreamingLLM sink)
  int64_t window = 0;   // W: the most recent keys are attended densely (sliding window)
  double rho = 0.5;     // representative position inside a branch: 0 first, 0.5 center, 1 last
  bool causal = true;   // false: every query sees all Tk keys (as if it were at position Tk - 1)
};

// Thrown for a parameter combination the algorithm cannot run with. what() names the broken rule,
// e.g. "k (500) must be a multiple of b_k (3)".
class HipParamError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Checks every rule (kernels/hip_param_rules.h, which the CUDA kernels check too): sizes >= 1, k a
// multiple of b_k >= b_k, b_k % b_sk == 0, b_q % b_sq == 0, sink and window >= 0 and multiples of b_k,
// rho in [0, 1], every size at most INT32_MAX (token positions are int32). Throws HipParamError.
void validate_hip_params(const HipParams& p);

// Number of key blocks kept per (head, query block): Kb = k / b_k.
inline int64_t hip_kb(const HipParams& p) { return p.k / p.b_k; }

// "center" -> 0.5, "first" -> 0, "last" -> 1, or a decimal FRACTION in [0, 1] ("0.25").
// Throws HipParamError naming the accepted forms.
double parse_repr(const std::string& text);

}  // namespace hipstudio::hip
