#pragma once
// The table of cases every selection-method test runs (CPU references against brute force, the
// tensor paths against the references on the CPU and on CUDA): T not a multiple of the blocks,
// sink and window, k beyond the range, GQA, given positions, non-causal; `ties` rounds the inputs
// to a few values so that equal scores are everywhere.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/hip_params.h"
#include "kernels/methods/selection_method.h"
#include "tests/kernels/hip_test_inputs.h"

namespace hipstudio::hip::testing {

struct SelectionShape {
  const char* name;
  int64_t hq, hkv, tq, tk, d;
  int64_t k, b_q, b_k, b_sq, sink, window;
  bool causal = true;
  bool positions = false;  // increasing positions with gaps, the last at tk - 1
};

inline std::vector<SelectionShape> selection_shapes() {
  return {
      {"plain", 2, 2, 96, 96, 16, 16, 8, 2, 1, 0, 0},
      {"gqa_sink_window", 4, 2, 101, 101, 12, 16, 8, 2, 2, 4, 6},
      {"k_beyond_range", 2, 1, 70, 70, 8, 512, 16, 2, 1, 2, 0},
      {"bigger_blocks", 3, 1, 133, 133, 20, 32, 16, 4, 4, 8, 8},
      {"positions", 2, 1, 40, 300, 16, 32, 8, 4, 2, 4, 4, true, true},
      {"noncausal", 2, 2, 24, 150, 16, 32, 8, 2, 1, 2, 0, false},
      {"shorter_than_a_page", 2, 1, 7, 7, 8, 16, 4, 2, 1, 0, 0},
  };
}

inline OwnedInputs selection_inputs(const SelectionShape& s, uint64_t seed, bool ties = false) {
  OwnedInputs o = random_inputs(s.hq, s.hkv, s.tq, s.tk, s.d, seed);
  if (ties) {
    for (float& x : o.q) x = std::round(x);
    for (float& x : o.k) x = std::round(x);
  }
  if (s.positions) {
    for (int64_t i = 0; i < s.tq; ++i) o.positions.push_back(s.tk - 1 - (s.tq - 1 - i) * 3);
  }
  return o;
}

inline HipParams selection_params(const SelectionShape& s) {
  HipParams p;
  p.k = s.k, p.b_q = s.b_q, p.b_k = s.b_k, p.b_sq = s.b_sq, p.b_sk = 1, p.sink = s.sink, p.window = s.window;
  p.causal = s.causal;
  return p;
}

inline methods::SelectionContext selection_context(const std::string& method, const HipParams& p,
                                                   const methods::MethodValues& given = {}) {
  methods::SelectionContext ctx;
  ctx.hip = p;
  ctx.values = methods::resolve_values(methods::find_selection_method(method), given, p);
  return ctx;
}

// The parameter sets each method runs with in the tables (Quest's page must divide k and be a
// multiple of b_k).
inline std::vector<methods::MethodValues> selection_value_sets(const std::string& method, const HipParams& p) {
  if (method == "quest") {
    std::vector<methods::MethodValues> out;
    for (int64_t page : {p.b_k, int64_t{8}, int64_t{16}})
      if (page % p.b_k == 0 && p.k % page == 0) out.push_back({{"quest_page", double(page)}});
    return out;
  }
  if (method == "vslash") return {{{"vslash_vertical_share", 0.5}}, {{"vslash_vertical_share", 0.0}},
                                  {{"vslash_vertical_share", 1.0}}};
  if (method == "random") return {{{"random_seed", 5}}};
  return {{}};
}

}  // namespace hipstudio::hip::testing
