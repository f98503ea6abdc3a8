#pragma once
// Owned attention inputs for the kernel tests, built from a fixed-seed generator so every run and
// every platform sees the same numbers.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"

namespace hipstudio::hip::testing {

// splitmix64: tiny, fully specified, good enough for test data.
struct TestRng {
  uint64_t state;
  explicit TestRng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  double normal() {  // Box-Muller
    const double u1 = uniform() + 1e-300, u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

struct OwnedInputs {
  std::vector<float> q;          // (hq, tq, d)
  std::vector<float> k;          // (hkv, tk, d)
  std::vector<float> v;          // (hkv, tk, d)
  std::vector<int64_t> positions;  // (tq) or empty
  int64_t hq = 1, hkv = 1, tq = 0, tk = 0, d = 0;

  AttentionInputs view(bool with_v = true) const {
    AttentionInputs in;
    in.q = q.data();
    in.k = k.data();
    in.v = with_v && !v.empty() ? v.data() : nullptr;
    in.positions = positions.empty() ? nullptr : positions.data();
    in.hq = hq;
    in.hkv = hkv;
    in.tq = tq;
    in.tk = tk;
    in.d = d;
    return in;
  }
};

// Gaussian Q, K, V.
inline OwnedInputs random_inputs(int64_t hq, int64_t hkv, int64_t tq, int64_t tk, int64_t d, uint64_t seed) {
  OwnedInputs o;
  o.hq = hq, o.hkv = hkv, o.tq = tq, o.tk = tk, o.d = d;
  TestRng rng(seed);
  o.q.resize(static_cast<size_t>(hq * tq * d));
  o.k.resize(static_cast<size_t>(hkv * tk * d));
  o.v.resize(static_cast<size_t>(hkv * tk * d));
  for (float& x : o.q) x = static_cast<float>(rng.normal());
  for (float& x : o.k) x = static_cast<float>(rng.normal());
  for (float& x : o.v) x = static_cast<float>(rng.normal());
  return o;
}

// One head whose raw scores q . k_j equal `scores[j]` up to a small per-row perturbation: every
// query row is (1, eps_i) and key j is (scores[j], noise_j), so dot = scores[j] + eps_i noise_j.
inline OwnedInputs planted_scores(const std::vector<double>& scores, int64_t tq, double row_eps, uint64_t seed) {
  OwnedInputs o;
  o.hq = o.hkv = 1;
  o.tq = tq;
  o.tk = static_cast<int64_t>(scores.size());
  o.d = 2;
  TestRng rng(seed);
  for (int64_t i = 0; i < tq; ++i) {
    o.q.push_back(1.0f);
    o.q.push_back(static_cast<float>(row_eps * rng.normal()));
  }
  for (double s : scores) {
    o.k.push_back(static_cast<float>(s));
    o.k.push_back(static_cast<float>(rng.normal()));
  }
  o.v.assign(o.k.size(), 0.5f);
  return o;
}

}  // namespace hipstudio::hip::testing
