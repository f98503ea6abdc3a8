#include "kernels/random_baseline.h"

#include <algorithm>
#include <vector>

#include "kernels/parallel_for.h"
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

MaskResult random_masks(const AttentionInputs& in, const HipParams& p, uint64_t seed, int threads) {
  validate_hip_params(p);
  validate_attention_inputs(in, false);
  MaskResult m = make_empty_mask(in, p);
  const int64_t items = m.heads * m.query_blocks;
  // Per worker: the flags of the search range (cleared entry by entry after use, so an item costs
  // O(Kb log Kb) rather than O(N): at 128k tokens N is 65536 blocks for each of 65536 items).
  struct Scratch {
    std::vector<char> taken;
    std::vector<int32_t> picked;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(parallel_workers(items, threads)));
  parallel_for(items, threads, [&](int64_t item, int worker) {
    const int64_t qb = item % m.query_blocks;
    const SearchRange sr = search_range(in, p, qb);
    const int64_t n = sr.blocks();
    const int64_t want = std::min<int64_t>(n, m.kb);
    int32_t* out = m.blocks.data() + item * m.kb;
    SplitMix64 rng{seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(item + 1))};
    Scratch& s = scratch[static_cast<size_t>(worker)];
    if (static_cast<int64_t>(s.taken.size()) < n) s.taken.resize(static_cast<size_t>(n), 0);
    s.picked.clear();
    // Floyd: for j = n - want .. n - 1 pick t in [0, j]; take t, or j when t is already taken.
    for (int64_t j = n - want; j < n; ++j) {
      const int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
      const int64_t take = s.taken[t] ? j : t;
      s.taken[take] = 1;
      s.picked.push_back(static_cast<int32_t>(take));
    }
    std::sort(s.picked.begin(), s.picked.end());
    for (size_t c = 0; c < s.picked.size(); ++c) {
      out[c] = static_cast<int32_t>(sr.lo + s.picked[c]);
      s.taken[s.picked[c]] = 0;
    }
    m.counts[item] = static_cast<int32_t>(s.picked.size());
  });
  return m;
}

}  // namespace hipstudio::hip
