// The offloading simulator on a model whose windowed layers interleave with the ones HiP replaces
// (Gemma 2/3's pattern): its layers are the streams' explicit list of HiP layers, each counted
// against a brute-force replay (a bank that holds the whole context misses exactly a key's first
// read; every other read hits), and malformed lists are refused.
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/offload/offload_simulator.h"

namespace hipstudio::offload {
namespace {

// Model layers 0..7, odd ones windowed, l_d 1: HiP replaces full-attention layers 2, 4 and 6.
// Each layer's lists have their own length (layer + 1 keys per head per step), so a count that
// lands on another layer shows.
AccessStreams interleaved_streams(int64_t steps, int64_t heads, int64_t T) {
  AccessStreams s;
  s.hip_layers = {2, 4, 6};
  s.layers = 3;
  s.heads = heads;
  s.steps = steps;
  s.first_layer = 2;
  std::mt19937 gen(7);
  for (int64_t step = 0; step < steps; ++step)
    for (int64_t i = 0; i < s.layers; ++i)
      for (int64_t h = 0; h < heads; ++h)
        for (auto* lists : {&s.mask_keys, &s.sparse_keys}) {
          std::set<int32_t> keys;
          while (static_cast<int64_t>(keys.size()) < s.hip_layers[static_cast<size_t>(i)] + 1)
            keys.insert(static_cast<int32_t>(gen() % static_cast<uint32_t>(T)));
          lists->emplace_back(keys.begin(), keys.end());
        }
  return s;
}

struct Brute {
  int64_t accesses = 0, misses = 0;
};

// Per model layer: reads, and first reads of a key within one (layer, head) bank.
std::vector<Brute> brute_force(const AccessStreams& s, bool mask, int64_t model_layers) {
  std::vector<Brute> per_layer(static_cast<size_t>(model_layers));
  for (int64_t i = 0; i < s.layers; ++i) {
    const int64_t layer = s.hip_layers[static_cast<size_t>(i)];
    for (int64_t h = 0; h < s.heads; ++h) {
      std::set<int32_t> seen;
      for (int64_t step = 0; step < s.steps; ++step)
        for (int32_t key : mask ? s.mask(step, i, h) : s.sparse(step, i, h)) {
          ++per_layer[static_cast<size_t>(layer)].accesses;
          if (seen.insert(key).second) ++per_layer[static_cast<size_t>(layer)].misses;
        }
    }
  }
  return per_layer;
}

TEST(OffloadHipLayers, InterleavedLayersAreCountedUnderTheirOwnModelLayer) {
  const int64_t T = 64, model_layers = 8;
  const AccessStreams s = interleaved_streams(5, 2, T);
  OffloadConfig c;
  c.k = 16;
  c.b_sk = 2;
  c.context_tokens = T;
  c.mask_bank_tokens = T;    // the whole context: only first reads miss
  c.sparse_bank_tokens = T;
  const OffloadResult r = simulate_offloading(s, c);
  ASSERT_EQ(r.hip_layers, s.hip_layers);
  for (bool mask : {true, false}) {
    const ContextStats& st = mask ? r.mask : r.sparse;
    const std::vector<Brute> expected = brute_force(s, mask, model_layers);
    for (int64_t layer = 0; layer < model_layers; ++layer) {
      const int64_t i = hip_layer_index(s, layer);
      const Brute& e = expected[static_cast<size_t>(layer)];
      if (i < 0) {
        EXPECT_EQ(e.accesses, 0) << "layer " << layer;
        continue;
      }
      EXPECT_EQ(r.hip_layers[static_cast<size_t>(i)], layer);
      EXPECT_EQ(st.per_layer[static_cast<size_t>(i)].accesses, e.accesses) << "layer " << layer;
      EXPECT_EQ(st.per_layer[static_cast<size_t>(i)].misses, e.misses) << "layer " << layer;
      EXPECT_EQ(st.per_layer[static_cast<size_t>(i)].hits, e.accesses - e.misses) << "layer " << layer;
    }
  }
  // Without the list, layer i would be first_layer + i: 2, 3, 4, none of them right past the first.
  AccessStreams contiguous = s;
  contiguous.hip_layers.clear();
  EXPECT_EQ(contiguous.model_layer(1), 3);
  EXPECT_EQ(s.model_layer(1), 4);
  EXPECT_EQ(hip_layer_index(s, 3), -1) << "layer 3 is windowed";
}

TEST(OffloadHipLayers, MalformedLayerListsAreRefused) {
  const AccessStreams good = interleaved_streams(2, 1, 32);
  OffloadConfig c;
  c.context_tokens = 32;
  auto refused = [&](AccessStreams s, const std::string& needle) {
    try {
      simulate_offloading(s, c);
      ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  AccessStreams s = good;
  s.hip_layers = {2, 6, 4};
  refused(s, "ascending");
  s = good;
  s.hip_layers = {2, 4};
  refused(s, "name 2 HiP layers");
  s = good;
  s.first_layer = 1;
  refused(s, "first_layer");
}

}  // namespace
}  // namespace hipstudio::offload
