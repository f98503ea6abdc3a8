// The simulator: default bank sizes, validation, counts that add up at every level, the folded
// access map, identical hits on both page tables, and the hit-ratio curve.
#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/offload/offload_simulator.h"
#include "tests/offload/offload_streams.h"

namespace hipstudio::offload {
namespace {

using testing::random_streams;

OffloadConfig small_config(int64_t T) {
  OffloadConfig c;
  c.k = 16;
  c.b_sk = 2;
  c.cache_factor = 1.0;  // mask bank = 1 * 8 * log2 T
  c.context_tokens = T;
  c.mask_bytes_per_token = 256;   // a 128-dim bf16 key
  c.sparse_bytes_per_token = 512; // key + value
  return c;
}

// Runs f(message) expecting an InputError whose message contains `needle`.
template <class F>
void expect_input_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no InputError; expected one mentioning \"" << needle << "\"";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(OffloadSimulator, DefaultBankSizesFollowThePaper) {
  // k_cache = c * (k / b_sk) * log2 T, rounded up; the sparse bank holds k.
  EXPECT_EQ(default_mask_bank_tokens(2.0, 512, 2, 65536), 8192);     // 2 * 256 * 16
  EXPECT_EQ(default_mask_bank_tokens(2.0, 512, 2, 100000), 8505);    // 512 * 16.6096... = 8504.14
  EXPECT_EQ(default_mask_bank_tokens(1.5, 256, 4, 1024), 960);       // 1.5 * 64 * 10
  EXPECT_EQ(default_mask_bank_tokens(2.0, 512, 2, 1), 0);            // log2 1 = 0
  OffloadConfig c;
  c.k = 512;
  c.b_sk = 2;
  c.context_tokens = 131072;
  EXPECT_EQ(mask_bank_tokens(c), 2 * 256 * 17);
  EXPECT_EQ(sparse_bank_tokens(c), 512);
  c.mask_bank_tokens = 100;  // explicit sizes win
  c.sparse_bank_tokens = 7;
  EXPECT_EQ(mask_bank_tokens(c), 100);
  EXPECT_EQ(sparse_bank_tokens(c), 7);

  AccessStreams s = random_streams(256, 2, 1, 1, 1);
  OffloadResult r = simulate_offloading(s, small_config(256));
  EXPECT_EQ(r.mask.bank_tokens, 64);  // 1 * (16 / 2) * 8
  EXPECT_EQ(r.sparse.bank_tokens, 16);
}

TEST(OffloadSimulator, RejectsBadConfigsAndStreams) {
  const AccessStreams s = random_streams(64, 3, 2, 2, 2);
  auto run = [&](OffloadConfig c) { return [&s, c] { simulate_offloading(s, c); }; };
  OffloadConfig c = small_config(64);
  c.mask_bank_tokens = -1;
  expect_input_error(run(c), "mask bank size -1");
  c = small_config(64);
  c.sparse_bank_tokens = -3;
  expect_input_error(run(c), "sparse bank size -3");
  c = small_config(64);
  c.b_sk = 0;
  expect_input_error(run(c), "b_sk = 0");
  c = small_config(64);
  c.context_tokens = 0;
  expect_input_error(run(c), "T = 0");
  c = small_config(64);
  c.cache_factor = -1;
  expect_input_error(run(c), "cache factor");
  c = small_config(64);
  c.k = -5;
  expect_input_error(run(c), "k = -5");
  c = small_config(64);
  c.sparse_bytes_per_token = -1;
  expect_input_error(run(c), "bytes per token");

  expect_input_error(run(small_config(32)), "outside the context [0, 32)");  // the streams reach 63
  AccessStreams unsorted = s;
  unsorted.sparse_keys[5] = {4, 2};
  expect_input_error([&] { simulate_offloading(unsorted, small_config(64)); }, "ascending");
  AccessStreams short_streams = s;
  short_streams.mask_keys.pop_back();
  expect_input_error([&] { simulate_offloading(short_streams, small_config(64)); }, "steps x layers x heads");
  expect_input_error([&] { head_access_map(s, small_config(64), OffloadContext::Mask, 2, 0); }, "layer 2");
  expect_input_error([&] { hit_ratio_curve(s, small_config(64), OffloadContext::Mask, {-4}); }, "bank size -4");
}

TEST(OffloadSimulator, CountsAddUpAtEveryLevel) {
  const int64_t T = 512, steps = 12, layers = 2, heads = 3;
  const AccessStreams s = random_streams(T, steps, layers, heads, 3);
  for (PageTableKind table : {PageTableKind::Vector, PageTableKind::Hash}) {
    for (EvictionPolicy policy : {EvictionPolicy::Lru, EvictionPolicy::Lfu}) {
      OffloadConfig config = small_config(T);
      config.table = table;
      config.policy = policy;
      const OffloadResult r = simulate_offloading(s, config);
      for (OffloadContext ctx : {OffloadContext::Mask, OffloadContext::Sparse}) {
        const ContextStats& st = r.of(ctx);
        BankCounts total;
        int64_t keys = 0;
        for (int64_t l = 0; l < layers; ++l) {
          BankCounts layer;
          for (int64_t h = 0; h < heads; ++h) {
            BankCounts head;
            for (int64_t t = 0; t < steps; ++t) {
              const BankCounts& c = r.step_counts(ctx, l, h, t);
              ASSERT_EQ(c.hits + c.misses, c.accesses);
              ASSERT_EQ(c.bytes, c.misses * st.bytes_per_token);
              keys += static_cast<int64_t>((ctx == OffloadContext::Mask ? s.mask(t, l, h) : s.sparse(t, l, h)).size());
              head += c;
            }
            EXPECT_EQ(st.per_head[static_cast<size_t>(l * heads + h)].hits, head.hits);
            EXPECT_EQ(st.per_head[static_cast<size_t>(l * heads + h)].misses, head.misses);
            layer += head;
          }
          EXPECT_EQ(st.per_layer[static_cast<size_t>(l)].accesses, layer.accesses);
          EXPECT_EQ(st.per_layer[static_cast<size_t>(l)].bytes, layer.bytes);
          total += layer;
        }
        BankCounts by_step;
        for (const BankCounts& c : st.per_step_total) by_step += c;
        EXPECT_EQ(total.accesses, keys);
        EXPECT_EQ(st.total.accesses, keys);
        EXPECT_EQ(st.total.hits + st.total.misses, st.total.accesses);
        EXPECT_EQ(by_step.hits, st.total.hits);
        EXPECT_EQ(by_step.evictions, st.total.evictions);
        EXPECT_EQ(total.probes, st.total.probes);
        EXPECT_GT(st.total.hits, 0);  // the streams have locality
      }
    }
  }
}

TEST(OffloadSimulator, AccessMapTakesTheWorstOutcomeOverHeads) {
  // One layer, two heads, T = 8, sparse banks of 1 token. Step 1: head 0 hits 5, head 1 misses 5.
  AccessStreams s;
  s.steps = 2;
  s.layers = 1;
  s.heads = 2;
  s.mask_keys = {{}, {}, {}, {}};
  s.sparse_keys = {{5}, {3}, {5}, {5}};  // (step, layer, head): (0,0,0) (0,0,1) (1,0,0) (1,0,1)
  OffloadConfig config = small_config(8);
  config.sparse_bank_tokens = 1;
  const OffloadResult r = simulate_offloading(s, config);
  const AccessMap& map = r.sparse.map;
  ASSERT_EQ(map.steps, 2);
  ASSERT_EQ(map.tokens, 8);
  EXPECT_EQ(map.at(0, 5), kAccessMiss);
  EXPECT_EQ(map.at(0, 3), kAccessMiss);
  EXPECT_EQ(map.at(1, 5), kAccessMiss);  // hit in head 0, miss in head 1: the miss shows
  EXPECT_EQ(map.at(1, 3), kAccessNone);
  EXPECT_EQ(head_access_map(s, config, OffloadContext::Sparse, 0, 0).at(1, 5), kAccessHit);
  EXPECT_EQ(r.sparse.total.hits, 1);
  EXPECT_EQ(r.mask.total.accesses, 0);
}

TEST(OffloadSimulator, AccessMapIsTheFoldOfThePerHeadMaps) {
  const int64_t T = 256, steps = 10, layers = 2, heads = 2;
  const AccessStreams s = random_streams(T, steps, layers, heads, 4);
  const OffloadConfig config = small_config(T);
  const OffloadResult r = simulate_offloading(s, config);
  for (OffloadContext ctx : {OffloadContext::Mask, OffloadContext::Sparse}) {
    std::vector<uint8_t> folded(static_cast<size_t>(steps * T), kAccessNone);
    for (int64_t l = 0; l < layers; ++l) {
      for (int64_t h = 0; h < heads; ++h) {
        const AccessMap m = head_access_map(s, config, ctx, l, h);
        for (int64_t t = 0; t < steps; ++t) {
          const BankCounts& c = r.step_counts(ctx, l, h, t);
          const auto row = m.cells.begin() + t * T;
          EXPECT_EQ(std::count(row, row + T, kAccessHit), c.hits);
          EXPECT_EQ(std::count(row, row + T, kAccessMiss), c.misses);
        }
        for (size_t i = 0; i < folded.size(); ++i) folded[i] = std::max(folded[i], m.cells[i]);
      }
    }
    EXPECT_EQ(r.of(ctx).map.cells, folded);
  }
  OffloadConfig no_map = config;
  no_map.build_access_map = false;
  EXPECT_TRUE(simulate_offloading(s, no_map).mask.map.cells.empty());
}

TEST(OffloadSimulator, VectorAndHashTablesGiveIdenticalHits) {
  const int64_t T = 4096;
  const AccessStreams s = random_streams(T, 15, 2, 2, 5);
  for (EvictionPolicy policy : {EvictionPolicy::Lru, EvictionPolicy::Lfu}) {
    OffloadConfig config = small_config(T);
    config.policy = policy;
    config.table = PageTableKind::Vector;
    const OffloadResult v = simulate_offloading(s, config);
    config.table = PageTableKind::Hash;
    const OffloadResult h = simulate_offloading(s, config);
    for (OffloadContext ctx : {OffloadContext::Mask, OffloadContext::Sparse}) {
      ASSERT_EQ(v.of(ctx).per_step.size(), h.of(ctx).per_step.size());
      for (size_t i = 0; i < v.of(ctx).per_step.size(); ++i) {
        ASSERT_EQ(v.of(ctx).per_step[i].hits, h.of(ctx).per_step[i].hits) << i;
        ASSERT_EQ(v.of(ctx).per_step[i].evictions, h.of(ctx).per_step[i].evictions) << i;
      }
      EXPECT_EQ(v.of(ctx).map.cells, h.of(ctx).map.cells);
      EXPECT_EQ(v.of(ctx).page_table_bytes, T * 4);
      EXPECT_LT(h.of(ctx).page_table_bytes, v.of(ctx).page_table_bytes);  // O(bank) vs O(T)
    }
  }
}

TEST(OffloadSimulator, HitRatioCurveMatchesTheSimulationAndNeverFallsForLru) {
  const int64_t T = 1024;
  const AccessStreams s = random_streams(T, 20, 2, 2, 6);
  OffloadConfig config = small_config(T);  // mask bank 80, sparse bank 16
  const OffloadResult r = simulate_offloading(s, config);
  std::vector<int64_t> sizes;
  for (int64_t n = 0; n <= 200; n += 4) sizes.push_back(n);
  for (OffloadContext ctx : {OffloadContext::Mask, OffloadContext::Sparse}) {
    const auto curve = hit_ratio_curve(s, config, ctx, sizes);
    ASSERT_EQ(curve.size(), sizes.size());
    EXPECT_EQ(curve.front().hit_ratio, 0.0);
    for (size_t i = 1; i < curve.size(); ++i) {
      EXPECT_GE(curve[i].hit_ratio, curve[i - 1].hit_ratio) << "bank " << curve[i].bank_tokens;
      EXPECT_EQ(curve[i].counts.accesses, r.of(ctx).total.accesses);
    }
    const int64_t configured = r.of(ctx).bank_tokens;
    const auto at_config = hit_ratio_curve(s, config, ctx, {configured});
    EXPECT_EQ(at_config[0].counts.hits, r.of(ctx).total.hits);
    EXPECT_DOUBLE_EQ(at_config[0].hit_ratio, hit_ratio(r.of(ctx).total));
    const auto one_head = hit_ratio_curve(s, config, ctx, {configured}, 1, 0);
    EXPECT_EQ(one_head[0].counts.hits, r.of(ctx).per_head[2].hits);  // (layer 1, head 0)
  }
}

}  // namespace
}  // namespace hipstudio::offload
