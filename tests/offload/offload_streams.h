#pragma once
// Test helpers for the offloading suite: random key-access streams with the locality HiP's reads
// have (sink tokens, a few drifting hot regions, some scattered reads), and an independent model of
// the bank's LRU (a recency stack) to check the bank against.
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "engine/offload/access_streams.h"

namespace hipstudio::offload::testing {

using Steps = std::vector<std::vector<int32_t>>;  // (step) ascending unique positions

// steps x about `reads` unique positions in [0, T): 70% near one of 4 drifting centres, 10% sink
// tokens, 20% uniform.
inline Steps locality_steps(int64_t T, int64_t steps, int64_t reads, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> anywhere(0, T - 1);
  std::normal_distribution<double> near(0.0, 4.0);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<int64_t> centres(4);
  for (auto& c : centres) c = anywhere(rng);
  Steps out;
  for (int64_t s = 0; s < steps; ++s) {
    for (auto& c : centres) c = std::clamp<int64_t>(c + std::lround(near(rng) / 2), 0, T - 1);
    std::set<int32_t> step;
    for (int64_t r = 0; r < reads; ++r) {
      double u = coin(rng);
      int64_t t = u < 0.7   ? centres[static_cast<size_t>(r % 4)] + std::lround(near(rng))
                  : u < 0.8 ? r % 4
                            : anywhere(rng);
      step.insert(static_cast<int32_t>(std::clamp<int64_t>(t, 0, T - 1)));
    }
    out.emplace_back(step.begin(), step.end());
  }
  return out;
}

// Streams of (steps, layers, heads), each head its own locality stream (mask reads more than sparse).
inline AccessStreams random_streams(int64_t T, int64_t steps, int64_t layers, int64_t heads, uint32_t seed) {
  AccessStreams s;
  s.steps = steps;
  s.layers = layers;
  s.heads = heads;
  s.first_layer = 1;
  s.mask_keys.resize(static_cast<size_t>(steps * layers * heads));
  s.sparse_keys.resize(s.mask_keys.size());
  for (int64_t l = 0; l < layers; ++l) {
    for (int64_t h = 0; h < heads; ++h) {
      uint32_t head_seed = seed * 1000 + static_cast<uint32_t>(l * heads + h);
      Steps mask = locality_steps(T, steps, 24, head_seed);
      Steps sparse = locality_steps(T, steps, 12, head_seed + 500);
      for (int64_t t = 0; t < steps; ++t) {
        s.mask_keys[static_cast<size_t>((t * layers + l) * heads + h)] = mask[static_cast<size_t>(t)];
        s.sparse_keys[static_cast<size_t>((t * layers + l) * heads + h)] = sparse[static_cast<size_t>(t)];
      }
    }
  }
  return s;
}

// The LRU the bank implements, written the slow obvious way: one recency stack, most recent first.
// A step hits the tokens among the stack's top C; then its tokens move to the top in step order
// (the last read the most recent). The bank of size C holds the top C.
struct RecencyStack {
  std::vector<int32_t> stack;
  int64_t hits(const std::vector<int32_t>& step, int64_t capacity) const {
    size_t top = std::min(stack.size(), static_cast<size_t>(capacity));
    int64_t n = 0;
    for (int32_t t : step) n += std::find(stack.begin(), stack.begin() + top, t) != stack.begin() + top;
    return n;
  }
  void push(const std::vector<int32_t>& step) {
    for (int32_t t : step) stack.erase(std::remove(stack.begin(), stack.end(), t), stack.end());
    stack.insert(stack.begin(), step.rbegin(), step.rend());
  }
  std::vector<int32_t> top(int64_t capacity) const {
    std::vector<int32_t> out(stack.begin(), stack.begin() + std::min(stack.size(), static_cast<size_t>(capacity)));
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace hipstudio::offload::testing
