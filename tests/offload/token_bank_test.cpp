// The token bank: hand-traced streams for LRU and LFU, the edge sizes, bytes, and the invariants
// (hits + misses == accesses; LRU hits never fall as the bank grows) on random streams.
#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/offload/token_bank.h"
#include "tests/offload/offload_streams.h"

namespace hipstudio::offload {
namespace {

using testing::locality_steps;
using testing::RecencyStack;
using testing::Steps;

constexpr PageTableKind kTables[] = {PageTableKind::Vector, PageTableKind::Hash};
constexpr EvictionPolicy kPolicies[] = {EvictionPolicy::Lru, EvictionPolicy::Lfu};

TokenBank make_bank(int64_t capacity, int64_t T, PageTableKind table, EvictionPolicy policy, int64_t bytes = 0) {
  BankConfig c;
  c.capacity = capacity;
  c.context_tokens = T;
  c.bytes_per_token = bytes;
  c.table = table;
  c.policy = policy;
  return TokenBank(c);
}

struct Expected {
  int64_t hits, misses, evictions;
  std::vector<int32_t> resident;  // ascending, after the step
};

void expect_trace(TokenBank& bank, const Steps& steps, const std::vector<Expected>& want) {
  ASSERT_EQ(steps.size(), want.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    BankCounts c = bank.access(steps[s]);
    EXPECT_EQ(c.accesses, static_cast<int64_t>(steps[s].size()));
    EXPECT_EQ(c.hits, want[s].hits);
    EXPECT_EQ(c.misses, want[s].misses);
    EXPECT_EQ(c.evictions, want[s].evictions);
    EXPECT_EQ(bank.resident_tokens(), want[s].resident);
  }
}

TEST(TokenBank, LruHandComputedStream) {
  // Capacity 3. Recency is written least -> most recent; [r] marks tokens reserved by the step.
  const Steps steps = {{1, 2, 3}, {2, 4}, {1, 3}, {0, 5, 6, 7}, {5, 6, 7, 8}, {2, 6, 7, 8}, {2}};
  const std::vector<Expected> want = {
      {0, 3, 0, {1, 2, 3}},  // cold: 1 2 3
      {1, 1, 1, {2, 3, 4}},  // 2 hit -> 1 3 2; 4 evicts 1 -> 3 2 4
      // 3 is reserved; 1 evicts the least recent unreserved token, 2 (in-order LRU would evict 3,
      // which the step still reads) -> 4 1, then 3 read -> 4 1 3
      {1, 1, 1, {1, 3, 4}},
      // 4 tokens, 3 slots: 0 evicts 4, 5 evicts 1, 6 evicts 3; 7 must evict a token of this step:
      // the earliest read, 0 -> 5 6 7
      {0, 4, 4, {5, 6, 7}},
      {3, 1, 1, {6, 7, 8}},  // 5 6 7 reserved and read (-> 5 6 7), 8 evicts 5 -> 6 7 8
      // 6 7 8 reserved, 2 comes first and finds no slot that is not reserved: read from host,
      // not cached; then 6 7 8 read -> 6 7 8
      {3, 1, 0, {6, 7, 8}},
      {0, 1, 1, {2, 7, 8}},  // 2 was not cached: miss, evicts 6 -> 7 8 2
  };
  for (PageTableKind table : kTables) {
    SCOPED_TRACE(page_table_kind_name(table));
    TokenBank bank = make_bank(3, 16, table, EvictionPolicy::Lru);
    expect_trace(bank, steps, want);
  }
}

TEST(TokenBank, LfuHandComputedStreamDiffersFromLru) {
  // Capacity 2; uses in parentheses, counted since the token was loaded.
  const Steps steps = {{1}, {1}, {2}, {3}, {1}, {5, 6}, {5}};
  const std::vector<Expected> lfu = {
      {0, 1, 0, {1}},     // 1(1)
      {1, 0, 0, {1}},     // 1(2)
      {0, 1, 0, {1, 2}},  // 1(2) 2(1)
      {0, 1, 1, {1, 3}},  // 3 evicts the least used, 2 -> 1(2) 3(1)
      {1, 0, 0, {1, 3}},  // 1(3) 3(1): LFU kept 1
      // 5 evicts 3 (fewest uses) -> 1(3) 5(1); 6 then evicts 1, not 5, although 5 has fewer uses:
      // 5 was read by this step (the same-step rule)
      {0, 2, 2, {5, 6}},
      {1, 0, 0, {5, 6}},
  };
  const std::vector<Expected> lru = {
      {0, 1, 0, {1}},     {1, 0, 0, {1}},
      {0, 1, 0, {1, 2}},  // 1 2
      {0, 1, 1, {2, 3}},  // 3 evicts the least recent, 1 -> 2 3
      {0, 1, 1, {1, 3}},  // 1 misses (LFU hit here), evicts 2 -> 3 1
      {0, 2, 2, {5, 6}},  // 5 evicts 3, 6 evicts 1
      {1, 0, 0, {5, 6}},
  };
  for (PageTableKind table : kTables) {
    SCOPED_TRACE(page_table_kind_name(table));
    TokenBank lfu_bank = make_bank(2, 16, table, EvictionPolicy::Lfu);
    expect_trace(lfu_bank, steps, lfu);
    TokenBank lru_bank = make_bank(2, 16, table, EvictionPolicy::Lru);
    expect_trace(lru_bank, steps, lru);
  }
}

TEST(TokenBank, LfuBreaksTiesByLeastRecentUse) {
  // Capacity 2: 1 and 2 both used once, 1 longer ago -> 3 evicts 1. Then 2(2) 3(1): 4 evicts 3.
  const Steps steps = {{1}, {2}, {3}, {2}, {4}};
  const std::vector<Expected> want = {
      {0, 1, 0, {1}}, {0, 1, 0, {1, 2}}, {0, 1, 1, {2, 3}}, {1, 0, 0, {2, 3}}, {0, 1, 1, {2, 4}}};
  TokenBank bank = make_bank(2, 8, PageTableKind::Hash, EvictionPolicy::Lfu);
  expect_trace(bank, steps, want);
}

TEST(TokenBank, CapacityZeroMissesEverything) {
  const Steps steps = locality_steps(256, 20, 16, 7);
  for (PageTableKind table : kTables) {
    for (EvictionPolicy policy : kPolicies) {
      TokenBank bank = make_bank(0, 256, table, policy, 10);
      for (const auto& step : steps) {
        BankCounts c = bank.access(step);
        EXPECT_EQ(c.hits, 0);
        EXPECT_EQ(c.misses, c.accesses);
        EXPECT_EQ(c.evictions, 0);
        EXPECT_EQ(c.bytes, c.accesses * 10);
        EXPECT_EQ(c.probes, c.accesses);  // one lookup each, nothing inserted (the hash map is empty)
        EXPECT_EQ(bank.resident(), 0);
      }
    }
  }
}

TEST(TokenBank, CapacityAtLeastDistinctTokensOnlyMissesColdTokens) {
  const int64_t T = 512;
  const Steps steps = locality_steps(T, 40, 20, 11);
  std::set<int32_t> distinct;
  for (const auto& step : steps) distinct.insert(step.begin(), step.end());
  const int64_t n = static_cast<int64_t>(distinct.size());
  for (int64_t capacity : {n, n + 1, 4 * n, T, 10 * T}) {  // beyond T is clamped to T
    for (PageTableKind table : kTables) {
      for (EvictionPolicy policy : kPolicies) {
        TokenBank bank = make_bank(capacity, T, table, policy);
        BankCounts total;
        for (const auto& step : steps) total += bank.access(step);
        EXPECT_EQ(total.misses, n) << "capacity " << capacity;
        EXPECT_EQ(total.evictions, 0);
        EXPECT_EQ(bank.capacity(), std::min(capacity, T));
      }
    }
  }
}

TEST(TokenBank, BytesAreMissesTimesBytesPerToken) {
  const Steps steps = locality_steps(300, 30, 20, 5);
  for (int64_t bytes : {0, 1, 256, 2 * 8 * 128 * 2}) {
    TokenBank bank = make_bank(17, 300, PageTableKind::Vector, EvictionPolicy::Lru, bytes);
    for (const auto& step : steps) {
      BankCounts c = bank.access(step);
      EXPECT_EQ(c.bytes, c.misses * bytes);
    }
  }
}

TEST(TokenBank, HitsPlusMissesEqualAccessesOnRandomStreams) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const Steps steps = locality_steps(1000, 30, 40, seed);
    for (int64_t capacity : {1, 5, 16, 33, 100}) {
      for (PageTableKind table : kTables) {
        for (EvictionPolicy policy : kPolicies) {
          TokenBank bank = make_bank(capacity, 1000, table, policy);
          std::vector<uint8_t> outcome;
          for (const auto& step : steps) {
            BankCounts c = bank.access(step, &outcome);
            ASSERT_EQ(c.hits + c.misses, c.accesses);
            ASSERT_EQ(c.accesses, static_cast<int64_t>(step.size()));
            ASSERT_EQ(std::count(outcome.begin(), outcome.end(), kAccessHit), c.hits);
            ASSERT_EQ(std::count(outcome.begin(), outcome.end(), kAccessMiss), c.misses);
            ASSERT_LE(bank.resident(), capacity);
          }
        }
      }
    }
  }
}

TEST(TokenBank, LruMatchesARecencyStack) {
  // The bank against the obvious model, including steps with more tokens than slots.
  const Steps steps = locality_steps(200, 60, 30, 3);
  for (int64_t capacity : {1, 4, 9, 20, 64}) {
    for (PageTableKind table : kTables) {
      TokenBank bank = make_bank(capacity, 200, table, EvictionPolicy::Lru);
      RecencyStack model;
      for (size_t s = 0; s < steps.size(); ++s) {
        int64_t want = model.hits(steps[s], capacity);
        model.push(steps[s]);
        ASSERT_EQ(bank.access(steps[s]).hits, want) << "capacity " << capacity << " step " << s;
        ASSERT_EQ(bank.resident_tokens(), model.top(capacity));
      }
    }
  }
}

TEST(TokenBank, LruHitRatioNeverFallsAsTheBankGrows) {
  // The inclusion property: a bank of C + 1 slots holds everything one of C slots holds, so every
  // step's hits (and so the hit ratio) are non-decreasing in C.
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    const Steps steps = locality_steps(2048, 50, 48, seed);
    for (PageTableKind table : kTables) {
      std::vector<int64_t> previous(steps.size(), 0);
      for (int64_t capacity = 0; capacity <= 256; capacity += capacity < 64 ? 1 : 16) {
        TokenBank bank = make_bank(capacity, 2048, table, EvictionPolicy::Lru);
        for (size_t s = 0; s < steps.size(); ++s) {
          int64_t hits = bank.access(steps[s]).hits;
          ASSERT_GE(hits, previous[s]) << "seed " << seed << " capacity " << capacity << " step " << s;
          previous[s] = hits;
        }
      }
    }
  }
}

TEST(TokenBank, StepTokensDoNotEvictEachOtherWhileOthersRemain) {
  // Capacity 3 holding 1 2 3 (1 least recent). The step reads 9 (a miss) before 1 (resident):
  // 1 must survive until read, so 9 evicts 2 under both policies.
  for (EvictionPolicy policy : kPolicies) {
    TokenBank bank = make_bank(3, 16, PageTableKind::Vector, policy);
    bank.access({1, 2, 3});
    BankCounts c = bank.access({9, 1});  // any order is allowed; unique is what matters
    EXPECT_EQ(c.hits, 1);
    EXPECT_EQ(c.misses, 1);
    EXPECT_EQ(bank.resident_tokens(), (std::vector<int32_t>{1, 3, 9})) << eviction_policy_name(policy);
  }
}

TEST(TokenBank, ResetEmptiesTheBank) {
  TokenBank bank = make_bank(4, 32, PageTableKind::Hash, EvictionPolicy::Lfu);
  bank.access({1, 2, 3});
  bank.reset();
  EXPECT_EQ(bank.resident(), 0);
  EXPECT_EQ(bank.access({1, 2, 3}).misses, 3);
}

TEST(TokenBank, RejectsBadInput) {
  BankConfig bad;
  bad.capacity = -1;
  EXPECT_THROW(TokenBank{bad}, InputError);
  bad.capacity = 1;
  bad.context_tokens = 0;
  EXPECT_THROW(TokenBank{bad}, InputError);
  bad.context_tokens = 8;
  bad.bytes_per_token = -2;
  EXPECT_THROW(TokenBank{bad}, InputError);

  TokenBank bank = make_bank(4, 8, PageTableKind::Vector, EvictionPolicy::Lru);
  bank.access({1, 2});
  try {
    bank.access({3, 8});
    FAIL() << "position 8 is outside [0, 8)";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the context"), std::string::npos) << e.what();
  }
  EXPECT_THROW(bank.access({-1}), InputError);
  EXPECT_THROW(bank.access({5, 4, 5}), InputError);  // repeated, unsorted
  EXPECT_THROW(bank.access({3, 3}), InputError);     // repeated, sorted
  EXPECT_EQ(bank.resident_tokens(), (std::vector<int32_t>{1, 2}));  // nothing changed
}

}  // namespace
}  // namespace hipstudio::offload
