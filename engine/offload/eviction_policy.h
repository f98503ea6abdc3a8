#pragma once
// Which token a full bank gives up for a missed one. The bank tells its evictor what happens to
// each slot during a decode step (see TokenBank::access for the order) and the evictor names the
// next victim.
//
// Same-step rule: the tokens of one step are read by one kernel launch, so a step's tokens must not
// evict each other while a token the step does not read is still in the bank. Hence the victim is,
// in this order of preference: a slot the step does not read; a slot the step has already read
// (the policy's lowest); none (kNoSlot), when every slot holds a token the step has yet to read.
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "engine/offload/page_table.h"  // kNoSlot

namespace hipstudio::offload {

enum class EvictionPolicy { Lru, Lfu };
const char* eviction_policy_name(EvictionPolicy policy);  // "LRU", "LFU"

class Evictor {
 public:
  virtual ~Evictor() = default;
  virtual void reserve(int32_t slot) = 0; // this step will read the token in slot: no victim until read
  virtual void hit(int32_t slot) = 0;     // the reserved token in slot is read now
  virtual void loaded(int32_t slot) = 0;  // a missed token now lives in slot (free, or the victim's)
  virtual int32_t victim() const = 0;     // full bank only: the slot to refill next, or kNoSlot
  virtual void end_step() = 0;            // the step's tokens are ordinary candidates again
  virtual void clear() = 0;               // empty bank
};

// Least recently used, O(1) per event: a doubly linked list over slots, most recent first. The
// same-step rule comes from the list itself: reserved slots are off the list until read, and a read
// moves a slot to the front, so the tail is a token the step has read only when no other is left.
class LruEvictor final : public Evictor {
 public:
  explicit LruEvictor(int64_t capacity);
  void reserve(int32_t slot) override { unlink(slot); }
  void hit(int32_t slot) override { move_to_front(slot); }
  void loaded(int32_t slot) override { move_to_front(slot); }
  int32_t victim() const override;
  void end_step() override {}
  void clear() override;

 private:
  void unlink(int32_t slot);
  void move_to_front(int32_t slot);
  int32_t sentinel_;            // = capacity: the list's head and tail meet here
  std::vector<int32_t> prev_;   // (capacity + 1); prev_[sentinel_] is the least recent slot
  std::vector<int32_t> next_;   // (capacity + 1); next_[sentinel_] is the most recent slot
  std::vector<uint8_t> linked_; // (capacity) slot is on the list
};

// Least frequently used, ties broken by least recent use, O(log capacity) per event. A use count
// starts at 1 when a token is loaded and is forgotten when it is evicted (in-cache LFU: the bank
// keeps no history of evicted tokens). Slots read in the current step wait in a pinned set until
// end_step(), and reserved slots are in neither set: that is how the same-step rule holds.
class LfuEvictor final : public Evictor {
 public:
  explicit LfuEvictor(int64_t capacity);
  void reserve(int32_t slot) override { unlist(slot); }
  void hit(int32_t slot) override;
  void loaded(int32_t slot) override;
  int32_t victim() const override;
  void end_step() override;
  void clear() override;

 private:
  struct Rank {  // ordering = eviction order: fewest uses first, then least recent
    int64_t uses = 0, last_use = 0;
    int32_t slot = 0;
    bool operator<(const Rank& o) const {
      if (uses != o.uses) return uses < o.uses;
      if (last_use != o.last_use) return last_use < o.last_use;
      return slot < o.slot;
    }
  };
  enum class Where : uint8_t { None, Evictable, Pinned };  // None: empty or reserved
  void unlist(int32_t slot);
  void pin(int32_t slot, int64_t uses);
  std::set<Rank> evictable_;   // slots not read in this step
  std::set<Rank> pinned_;      // slots read in this step
  std::vector<Rank> rank_;     // (capacity) current rank of each slot
  std::vector<Where> where_;   // (capacity) which set holds the slot
  int64_t clock_ = 0;          // counts uses; last_use stamps
};

std::unique_ptr<Evictor> make_evictor(EvictionPolicy policy, int64_t capacity);

}  // namespace hipstudio::offload
