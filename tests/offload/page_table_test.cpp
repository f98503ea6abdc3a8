// Page tables: the hash map against a std::unordered_map model (random and forced collisions), its
// sizing, and token banks on either table giving identical hits.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <unordered_map>

#include "engine/offload/page_table.h"
#include "engine/offload/token_bank.h"

namespace hipstudio::offload {
namespace {

// Every token of [0, universe) must map as the model says.
void expect_same(HashPageTable& table, const std::unordered_map<int32_t, int32_t>& model, int32_t universe) {
  for (int32_t t = 0; t < universe; ++t) {
    auto it = model.find(t);
    ASSERT_EQ(table.find(t), it == model.end() ? kNoSlot : it->second) << "token " << t;
  }
  ASSERT_EQ(table.size(), static_cast<int64_t>(model.size()));
}

TEST(PageTable, HashCapacityIsAPowerOfTwoAtLeastTwiceTheBank) {
  for (int64_t bank : {0, 1, 2, 3, 5, 8, 100, 1024, 1025}) {
    HashPageTable table(bank);
    const int64_t cap = table.capacity();
    EXPECT_EQ(cap & (cap - 1), 0) << bank;
    EXPECT_GE(cap, 2 * bank);
    EXPECT_LT(cap, std::max<int64_t>(4 * bank, 4));  // the smallest such power of two
    EXPECT_EQ(table.memory_bytes(), cap * 8);        // key + slot, 4 bytes each
  }
  EXPECT_EQ(VectorPageTable(65536).memory_bytes(), 65536 * 4);
}

TEST(PageTable, HashMatchesAModelUnderRandomInsertsAndErases) {
  std::mt19937 rng(42);
  const int64_t bank = 50;
  const int32_t universe = 400;
  HashPageTable table(bank);
  std::unordered_map<int32_t, int32_t> model;
  std::uniform_int_distribution<int32_t> token(0, universe - 1);
  for (int op = 0; op < 4000; ++op) {
    int32_t t = token(rng);
    if (model.count(t)) {
      table.erase(t);
      model.erase(t);
    } else if (static_cast<int64_t>(model.size()) < bank) {
      table.insert(t, op);
      model[t] = op;
    }
    if (op % 200 == 0) expect_same(table, model, universe);
  }
  expect_same(table, model, universe);
}

TEST(PageTable, HashHandlesForcedCollisionsAndDeletions) {
  // A bank of 8 -> 16 cells. Pick tokens whose home is the last cell (their run wraps around to
  // cell 0) or cell 0 or 1, so every insert collides and every erase must shift entries back
  // across the wrap.
  HashPageTable table(8);
  ASSERT_EQ(table.capacity(), 16);
  std::vector<int32_t> colliding;
  for (int32_t t = 0; colliding.size() < 8 && t < 100000; ++t) {
    int64_t home = table.home_bucket(t);
    if (home == 15 || home == 0 || home == 1) colliding.push_back(t);
  }
  ASSERT_EQ(colliding.size(), 8u);
  std::unordered_map<int32_t, int32_t> model;
  const int32_t universe = *std::max_element(colliding.begin(), colliding.end()) + 1;
  for (int round = 0; round < 6; ++round) {
    for (size_t i = 0; i < colliding.size(); ++i) {
      table.insert(colliding[i], round * 10 + static_cast<int32_t>(i));
      model[colliding[i]] = round * 10 + static_cast<int32_t>(i);
    }
    expect_same(table, model, universe);
    // Erase in a different order each round: from the front, the back, the middle out.
    std::vector<int32_t> order = colliding;
    std::shuffle(order.begin(), order.end(), std::mt19937(round));
    for (size_t i = 0; i < order.size(); ++i) {
      table.erase(order[i]);
      model.erase(order[i]);
      if (i % 2 == 1) expect_same(table, model, universe);
    }
  }
  EXPECT_EQ(table.size(), 0);
}

// Banks on the two tables over a stream made of colliding tokens: same hits and outcomes token by
// token, same residents; only probes and memory differ.
TEST(PageTable, VectorAndHashBanksGiveIdenticalHitsUnderCollisions) {
  const int64_t capacity = 8, T = 4096;
  HashPageTable probe(capacity);  // same sizing as the bank's table, to find colliding tokens
  std::vector<int32_t> pool;
  for (int32_t t = 0; t < T && pool.size() < 40; ++t) {
    int64_t home = probe.home_bucket(t);
    if (home == 0 || home == 7 || home == 15) pool.push_back(t);
  }
  ASSERT_EQ(pool.size(), 40u);
  std::mt19937 rng(9);
  for (EvictionPolicy policy : {EvictionPolicy::Lru, EvictionPolicy::Lfu}) {
    BankConfig config;
    config.capacity = capacity;
    config.context_tokens = T;
    config.policy = policy;
    config.table = PageTableKind::Vector;
    TokenBank vec(config);
    config.table = PageTableKind::Hash;
    TokenBank hash(config);
    int64_t vector_probes = 0, hash_probes = 0, evictions = 0;
    std::vector<uint8_t> vo, ho;
    for (int step = 0; step < 300; ++step) {
      std::vector<int32_t> tokens = pool;
      std::shuffle(tokens.begin(), tokens.end(), rng);
      tokens.resize(1 + step % 10);  // up to 10 tokens: some steps overfill the bank
      BankCounts v = vec.access(tokens, &vo);
      BankCounts h = hash.access(tokens, &ho);
      ASSERT_EQ(vo, ho) << "step " << step;
      ASSERT_EQ(v.hits, h.hits);
      ASSERT_EQ(v.evictions, h.evictions);
      ASSERT_EQ(vec.resident_tokens(), hash.resident_tokens());
      vector_probes += v.probes;
      hash_probes += h.probes;
      evictions += v.evictions;
    }
    EXPECT_GT(evictions, 500);              // the stream really churned the bank
    EXPECT_GT(hash_probes, vector_probes);  // collisions cost probes
    EXPECT_LT(hash.page_table_bytes(), vec.page_table_bytes());
  }
}

}  // namespace
}  // namespace hipstudio::offload
