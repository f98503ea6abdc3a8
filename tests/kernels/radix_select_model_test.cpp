// A CPU model of the few-search kernel's radix selection (kernels/cuda/mask_cluster_kernel.cu
// `select_from_top`): the same per-key arithmetic (kernels/cuda/radix_select.h) and the same
// bookkeeping, with the 16 warps x 32 lanes' ballots written as loops. It checks the algorithm
// (the cut and every kept branch's position equal a stable sort's, ties and empty slots included);
// the kernel itself is checked against the CPU reference on a GPU
// (HipCudaRawApi.ClusterSearchMasksIdenticalForEveryClusterSize).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
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

// One selection of the Kb largest of `keys` (0: no branch), pass by pass as the kernel makes it.
ModelCut select_from_top_model(const std::vector<uint32_t>& keys, int kb) {
  uint32_t prefix = 0;
  int above = 0, shift = 27, bits = 5;
  bool exact = false;
  ModelCut cut;
  do {
    ++cut.passes;
    std::vector<int> total(32, 0);  // keys matching the prefix with a digit >= v
    for (int i = 0; i < kSlots; ++i) {
      const gpu::PassDigit d = gpu::radix_pass_digit(keys[i], prefix, shift, bits);
      for (int v = 0; v < 32; ++v) total[v] += d.match && static_cast<int>(d.digit) >= v;
    }
    int best = 31;  // the Kb-th key's digit: the largest whose count still reaches Kb
    while (above + total[best] < kb) --best;
    prefix |= static_cast<uint32_t>(best) << shift;
    if (above + total[best] == kb) {  // exactly Kb keys >= prefix: no tie crosses the cut
      exact = true;
      break;
    }
    above += best == 31 ? 0 : total[best + 1];
  } while (gpu::next_radix_digit(shift, bits));
  cut.thr = exact ? prefix - 1 : prefix;
  cut.need = exact ? 0 : kb - above;
  int gt_running = 0, eq_running = 0;  // the per-warp counts at the cut, as the kernel's ballots give them
  for (int w = 0; w < kWarps; ++w) {
    cut.gt_base.push_back(gt_running), cut.eq_base.push_back(eq_running);
    for (int l = 0; l < 32; ++l) gt_running += keys[w * 32 + l] > cut.thr, eq_running += keys[w * 32 + l] == cut.thr;
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

TEST(RadixSelectModel, KeepsWhatAStableSortKeeps) {
  std::mt19937_64 rng(20261123);
  int passes = 0, selections = 0;
  for (int trial = 0; trial < 2400; ++trial, ++selections) {
    const int kb = 1 + static_cast<int>(rng() % 256), kind = trial % 4;
    const int real = std::min(kSlots, kb + 1 + static_cast<int>(rng() % (2 * kb)));
    std::normal_distribution<float> normal(kind == 3 ? 30.f : 0.f, kind == 2 ? 0.01f : 11.f);
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<uint32_t> keys(kSlots, 0u);
    for (int i = 0; i < real; ++i) {
      float s = kind == 0 ? static_cast<float>(small(rng)) : normal(rng);  // kind 0: ties everywhere
      if (kind == 1 && rng() % 7 == 0) s = -INFINITY;
      keys[i] = gpu::score_key32(s);
    }
    std::shuffle(keys.begin(), keys.end(), rng);  // empty slots anywhere
    const ModelCut cut = select_from_top_model(keys, kb);
    passes += cut.passes;
    ASSERT_LE(cut.passes, 7) << "32 bits in 5-bit digits";
    ASSERT_EQ(kept_positions(keys, cut), sorted_positions(keys, kb)) << "trial " << trial;
  }
  std::printf("%.2f passes a selection\n", static_cast<double>(passes) / selections);
}

// The warp search keeps branch scores only as keys and turns the kept ones back into scores: the
// inverse must give every float back (bit for bit; -0 as +0), and keep the order.
TEST(ScoreKey32, InverseGivesTheScoreBack) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 50.0f);
  std::vector<float> scores = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, 1e-42f, -1e-42f, 3.4e38f, -3.4e38f};
  for (int i = 0; i < 10000; ++i) scores.push_back(normal(rng));
  for (float s : scores) {
    const float back = gpu::score_of_key32(gpu::score_key32(s));
    uint32_t a, b;
    const float expect = s == 0.0f ? 0.0f : s;
    std::memcpy(&a, &back, 4);
    std::memcpy(&b, &expect, 4);
    EXPECT_EQ(a, b) << s;
  }
  for (size_t i = 1; i < scores.size(); ++i)
    EXPECT_EQ(scores[i - 1] < scores[i], gpu::score_key32(scores[i - 1]) < gpu::score_key32(scores[i])) << i;
}

}  // namespace
}  // namespace hipstudio
