#pragma once
// Which token a full bank gives up for a missed one. The bank tells its evictor what happened to
// each slot (loaded, hit) and when a decode step ends; the evictor names the next victim slot.
//
// Same-step rule: the tokens of one step are read by one kernel launch, so a token the step has
// already fetched must not be evicted to make room for a later token of the same step unless every
// slot holds a token of this step (a step with more unique tokens than slots); then the victim is
// the one the policy ranks lowest among them, which for LRU is the earliest-read token of the step.
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

namespace hipstudio::offload {

enum class EvictionPolicy { Lru, Lfu };
const char* eviction_policy_name(EvictionPolicy policy);  // "LRU", "LFU"

class Evictor {
 public:
  virtual ~Evictor() = default;
  virtual void loaded(int32_t slot) = 0;  // a missed token now lives in slot (also after eviction)
  virtual void hit(int32_t slot) = 0;     // the token in slot was read again
  virtual int32_t victim() const = 0;     // full bank only: the slot to refill next
  virtual void end_step() = 0;            // the step's tokens may be evicted from now on
  virtual void clear() = 0;               // empty bank
};

// Least recently used, O(1) per event: a doubly linked list over slots, most recent first. It
// keeps the same-step rule by itself: every token of the current step was moved to the front when
// read, so the tail is a token of this step only when all slots are.
class LruEvictor final : public Evictor {
 public:
  explicit LruEvictor(int64_t capacity);
  void loaded(int32_t slot) override { move_to_front(slot); }
  void hit(int32_t slot) override { move_to_front(slot); }
  int32_t victim() const override { return prev_[sentinel_]; }
  void end_step() override {}
  void clear() override;

 private:
  void move_to_front(int32_t slot);
  int32_t sentinel_;            // = capacity: the list's head and tail meet here
  std::vector<int32_t> prev_;   // (capacity + 1); prev_[sentinel_] is the least recent slot
  std::vector<int32_t> next_;   // (capacity + 1); next_[sentinel_] is the most recent slot
  std::vector<uint8_t> linked_; // (capacity) slot is on the list
};

// Least frequently used, ties broken by least recent use, O(log capacity) per event. A use count
// starts at 1 when a token is loaded and is forgotten when it is evicted (in-cache LFU: the bank
// keeps no history of evicted tokens). Slots read in the current step are pinned (kept out of the
// evictable set) until end_step(), which is how the same-step rule holds.
class LfuEvictor final : public Evictor {
 public:
  explicit LfuEvictor(int64_t capacity);
  void loaded(int32_t slot) override;
  void hit(int32_t slot) override;
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
  enum class Where : uint8_t { None, Evictable, Pinned };
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
