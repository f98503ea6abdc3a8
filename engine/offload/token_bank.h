#pragma once
// One GPU token bank of an offloading context (paper section 3.3): `capacity` token slots, a page
// table (token -> slot) and an eviction policy. access() replays one decode step's reads and counts
// what the kernel would see: hits served from the bank, misses fetched from host memory over PCIe.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/offload/eviction_policy.h"
#include "engine/offload/page_table.h"

namespace hipstudio::offload {

// Counters of one step, or sums of steps. Invariant: hits + misses == accesses.
struct BankCounts {
  int64_t accesses = 0;
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t bytes = 0;      // misses x bytes_per_token: what would cross PCIe
  int64_t evictions = 0;  // resident tokens dropped to make room
  int64_t probes = 0;     // page-table cells read or written
  BankCounts& operator+=(const BankCounts& o);
};
double hit_ratio(const BankCounts& c);  // hits / accesses; 0 when nothing was read

// Outcome of one token read, as stored in access maps (a larger value is worse).
enum AccessOutcome : uint8_t { kAccessNone = 0, kAccessHit = 1, kAccessMiss = 2 };

struct BankConfig {
  int64_t capacity = 0;        // token slots; 0 = no bank, every read misses
  int64_t context_tokens = 1;  // T: tokens must lie in [0, T)
  int64_t bytes_per_token = 0; // bytes fetched per miss (key only, or key + value)
  PageTableKind table = PageTableKind::Vector;
  EvictionPolicy policy = EvictionPolicy::Lru;
};

class TokenBank {
 public:
  explicit TokenBank(const BankConfig& config);  // throws InputError on negative sizes or T < 1

  // One decode step. tokens: (n) unique positions in [0, T), in the order the kernel reads them.
  // The step runs in two phases, as a kernel that looks up all its keys before fetching any:
  //  1. look up every token; resident ones are hits and are reserved (not evictable until read);
  //  2. in step order, read hits, and fetch each miss into a free slot or the victim's slot.
  // So a step's tokens never evict each other while the bank holds a token the step does not read,
  // and a token the step has yet to read is never evicted: a miss that finds every slot reserved is
  // read from host memory without being cached. With LRU this makes the bank after each step the
  // C most recent tokens of one recency stack (step order within a step) whatever C is, so hits
  // can only grow with C (the inclusion property the tests check).
  // outcome, when given, is resized to (n) and receives kAccessHit / kAccessMiss per token.
  // Throws InputError, before changing anything, for a token outside [0, T) or a repeated token.
  BankCounts access(const std::vector<int32_t>& tokens, std::vector<uint8_t>* outcome = nullptr);

  void reset();                                // empty the bank, keep its configuration
  int64_t capacity() const { return capacity_; }  // min(configured capacity, T)
  int64_t resident() const { return used_; }
  std::vector<int32_t> resident_tokens() const;   // ascending; does not touch the page table
  int64_t page_table_bytes() const { return table_->memory_bytes(); }

 private:
  void check_step(const std::vector<int32_t>& tokens);  // range and uniqueness; throws InputError
  BankConfig config_;
  int64_t capacity_ = 0;  // slots beyond T could never fill, so they are not allocated
  int64_t used_ = 0;      // slots [0, used_) hold tokens; they fill in order, never empty again
  std::vector<int32_t> slot_token_;  // (capacity) token held by each slot
  std::vector<int32_t> hit_slot_;    // (n) scratch of access(): slot of each token, kNoSlot on a miss
  std::vector<int32_t> sorted_;      // (n) scratch of access(): for the uniqueness check
  std::unique_ptr<PageTable> table_;
  std::unique_ptr<Evictor> evictor_;
};

}  // namespace hipstudio::offload
