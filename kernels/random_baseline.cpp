#include "kernels/random_baseline.h"

#include <algorithm>
#include <vector>

#include "kernels/search_range.h"

namespace hipstudio::hip {
namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound >= 1, without modulo bias.
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      const uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }
};

}  // namespace

MaskResult random_masks(const AttentionInputs& in, const HipParams& p, uint64_t seed) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  MaskResult m = make_empty_mask(in, p);
  std::vector<char> taken;
  for (int64_t h = 0; h < m.heads; ++h) {
    for (int64_t qb = 0; qb < m.query_blocks; ++qb) {
      const int64_t item = m.index(h, qb);
      const SearchRange sr = search_range(in, p, qb);
      const int64_t n = sr.blocks();
      const int64_t want = std::min<int64_t>(n, m.kb);
      int32_t* out = m.blocks.data() + item * m.kb;
      SplitMix64 rng{seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(item + 1))};
      // Floyd: for j = n - want .. n - 1 pick t in [0, j]; take t, or j when t is already taken.
      taken.assign(static_cast<size_t>(n), 0);
      for (int64_t j = n - want; j < n; ++j) {
        const int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
        taken[taken[t] ? j : t] = 1;
      }
      int64_t c = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (taken[j]) out[c++] = static_cast<int32_t>(sr.lo + j);
      }
      m.counts[item] = static_cast<int32_t>(c);
    }
  }
  return m;
}

}  // namespace hipstudio::hip
