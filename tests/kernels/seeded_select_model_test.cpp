// A CPU model of the few-search kernel's seeded radix selection (kernels/cuda/mask_cluster_kernel.cu
// `select_seeded`, v17): the same per-key arithmetic (kernels/cuda/radix_select.h) and the same
// bookkeeping, with the 16 warps x 32 lanes' ballots written as loops. It checks the algorithm
// (the cut and every kept branch's position equal a stable sort's, ties and empty slots included)
// and that seeding saves passes on decode-like scores; the kernel itself is checked against the
// CPU reference on a GPU (HipCudaRawApi.ClusterSearchMasksIdenticalForEveryClusterSize).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cuda/radix_select.h"

namespace hipstudio {
namespace {

constexpr int kWarps = 16, kSlots = kWarps * 32;

struct ModelCut {
  uint32_t thr = 0;
  int need = 0, passes = 0;
  std::vector<int> gt_base, eq_base;  // per warp
};

// One selection of the Kb largest of `keys` (0: no branch); `seed` in/out as in the kernel.
ModelCut select_seeded_model(const std::vector<uint32_t>& keys, int kb, uint32_t& seed) {
  bool seeded = seed != 0;
  const uint32_t lo = seeded ? gpu::seed_window_start(seed) : 0u;
  uint32_t prefix = 0;
  int above = 0, shift = seeded ? gpu::kSeedSub : 27, bits = 5;
  std::vector<int> warp_above(kWarps, 0);
  ModelCut cut;
  for (;;) {
    ++cut.passes;
    // rows[w][v]: warp w's keys matching with digit >= v; rows[w][32]: above the window.
    std::vector<std::vector<int>> rows(kWarps, std::vector<int>(33, 0));
    std::vector<int> total(33, 0);
    for (int i = 0; i < kSlots; ++i) {
      const gpu::PassDigit d = seeded ? gpu::seeded_pass_digit(keys[i], lo) : gpu::radix_pass_digit(keys[i], prefix, shift, bits);
      for (int v = 0; v < 32; ++v) rows[i / 32][v] += d.match && static_cast<int>(d.digit) >= v;
      rows[i / 32][32] += d.above;
    }
    for (int w = 0; w < kWarps; ++w)
      for (int v = 0; v < 33; ++v) total[v] += rows[w][v];
    if (seeded) {
      seeded = false;
      if (total[32] >= kb || total[32] + total[0] < kb) {  // outside the window: from the top
        shift = 27;
        continue;
      }
      prefix = lo, above = total[32];
      for (int w = 0; w < kWarps; ++w) warp_above[w] = rows[w][32];
    }
    int best = 31;
    while (above + total[best] < kb) --best;
    const int cum_best = total[best], cum_after = best == 31 ? 0 : total[best + 1];
    prefix += static_cast<uint32_t>(best) << shift;
    if (above + cum_best == kb) {
      cut.thr = prefix - 1, cut.need = 0;
      for (int w = 0; w < kWarps; ++w) warp_above[w] += rows[w][best];
      break;
    }
    above += cum_after;
    for (int w = 0; w < kWarps; ++w) warp_above[w] += best == 31 ? 0 : rows[w][best + 1];
    if (shift == 0) {
      cut.thr = prefix, cut.need = kb - above;
      for (int w = 0; w < kWarps; ++w) warp_above[w] |= (rows[w][best] - (best == 31 ? 0 : rows[w][best + 1])) << 10;
      break;
    }
    gpu::next_radix_digit(shift, bits);
  }
  seed = prefix;
  int running = 0;
  for (int w = 0; w < kWarps; ++w) {
    cut.gt_base.push_back(running & 1023), cut.eq_base.push_back((running >> 10) & 1023);
    running += warp_above[w];
  }
  return cut;
}

// Each kept slot's position among the kept ones (-1: not kept), as the kernel derives it.
std::vector<int> kept_positions(const std::vector<uint32_t>& keys, const ModelCut& cut) {
  std::vector<int> pos(kSlots, -1);
  for (int w = 0; w < kWarps; ++w) {
    int gt_before = 0, eq_before = 0;
    for (int l = 0; l < 32; ++l) {
      const uint32_t k = keys[w * 32 + l];
      const bool gt = k > cut.thr, eq = k == cut.thr;
      const int gt_rank = cut.gt_base[w] + gt_before, eq_rank = cut.eq_base[w] + eq_before;
      if (gt || (eq && eq_rank < cut.need)) pos[w * 32 + l] = gt_rank + std::min(cut.need, eq_rank);
      gt_before += gt, eq_before += eq;
    }
  }
  return pos;
}

// The reference: score descending, ties in slot order; positions in slot order.
std::vector<int> sorted_positions(const std::vector<uint32_t>& keys, int kb) {
  std::vector<int> order(kSlots);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[a] > keys[b]; });
  std::vector<char> kept(kSlots, 0);
  for (int i = 0; i < kb; ++i) kept[order[i]] = 1;
  std::vector<int> pos(kSlots, -1);
  for (int i = 0, n = 0; i < kSlots; ++i)
    if (kept[i]) pos[i] = n++;
  return pos;
}

TEST(SeededSelectModel, KeepsWhatAStableSortKeeps) {
  std::mt19937_64 rng(20261123);
  for (int trial = 0; trial < 600; ++trial) {
    const int kb = 1 + static_cast<int>(rng() % 256), kind = trial % 4;
    uint32_t seed = 0;
    for (int iter = 0; iter < 8; ++iter) {  // the seed carries over as in a search
      const int real = std::min(kSlots, kb + 1 + static_cast<int>(rng() % (2 * kb)));
      std::normal_distribution<float> normal(kind == 3 ? 3.f * iter : 0.f, kind == 2 ? 0.01f : 11.f);
      std::uniform_int_distribution<int> small(-3, 3);
      std::vector<uint32_t> keys(kSlots, 0u);
      for (int i = 0; i < real; ++i) {
        float s = kind == 0 ? static_cast<float>(small(rng)) : normal(rng);  // kind 0: ties everywhere
        if (kind == 1 && rng() % 7 == 0) s = -INFINITY;
        keys[i] = gpu::score_key32(s);
      }
      std::shuffle(keys.begin(), keys.end(), rng);  // empty slots anywhere
      const ModelCut cut = select_seeded_model(keys, kb, seed);
      ASSERT_EQ(kept_positions(keys, cut), sorted_positions(keys, kb)) << "trial " << trial << " iteration " << iter;
    }
  }
}

// Decode-like: Kb 256 of 512 branch scores, each the max of 2 normal dot products; the seeded
// passes stay near 2 an iteration (the first iteration has no seed) at any score scale, where the
// selection from the top takes about 3.5.
TEST(SeededSelectModel, SeedingSavesPassesOnDecodeLikeScores) {
  std::mt19937_64 rng(7);
  for (const float sigma : {0.1f, 1.f, 11.f, 300.f}) {
    std::normal_distribution<float> normal(0.f, sigma);
    int seeded_passes = 0, top_passes = 0, selections = 0;
    for (int search = 0; search < 40; ++search) {
      uint32_t seed = 0;
      for (int iter = 0; iter < 8; ++iter, ++selections) {
        std::vector<uint32_t> keys(kSlots);
        for (uint32_t& k : keys) k = gpu::score_key32(std::max(normal(rng), normal(rng)));
        uint32_t none = 0;
        top_passes += select_seeded_model(keys, 256, none).passes;
        seeded_passes += select_seeded_model(keys, 256, seed).passes;
      }
    }
    const double seeded = static_cast<double>(seeded_passes) / selections, top = static_cast<double>(top_passes) / selections;
    std::printf("sigma %g: %.2f passes seeded, %.2f from the top\n", sigma, seeded, top);
    EXPECT_LT(seeded, 2.4) << sigma;
    EXPECT_GT(top, 3.0) << sigma;
  }
}

}  // namespace
}  // namespace hipstudio
