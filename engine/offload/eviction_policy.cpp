#include "engine/offload/eviction_policy.h"

#include <algorithm>

namespace hipstudio::offload {

const char* eviction_policy_name(EvictionPolicy policy) {
  return policy == EvictionPolicy::Lru ? "LRU" : "LFU";
}

// ---- LRU -------------------------------------------------------------------------------------

LruEvictor::LruEvictor(int64_t capacity)
    : sentinel_(static_cast<int32_t>(capacity)),
      prev_(static_cast<size_t>(capacity) + 1),
      next_(static_cast<size_t>(capacity) + 1),
      linked_(static_cast<size_t>(capacity)) {
  clear();
}

void LruEvictor::clear() {
  prev_[sentinel_] = next_[sentinel_] = sentinel_;
  std::fill(linked_.begin(), linked_.end(), uint8_t{0});
}

void LruEvictor::unlink(int32_t slot) {
  if (!linked_[slot]) return;
  next_[prev_[slot]] = next_[slot];
  prev_[next_[slot]] = prev_[slot];
  linked_[slot] = 0;
}

int32_t LruEvictor::victim() const {
  int32_t last = prev_[sentinel_];
  return last == sentinel_ ? kNoSlot : last;  // empty list: every slot is reserved
}

void LruEvictor::move_to_front(int32_t slot) {
  unlink(slot);
  int32_t first = next_[sentinel_];
  prev_[slot] = sentinel_;
  next_[slot] = first;
  prev_[first] = slot;
  next_[sentinel_] = slot;
  linked_[slot] = 1;
}

// ---- LFU -------------------------------------------------------------------------------------

LfuEvictor::LfuEvictor(int64_t capacity)
    : rank_(static_cast<size_t>(capacity)), where_(static_cast<size_t>(capacity), Where::None) {}

void LfuEvictor::unlist(int32_t slot) {
  if (where_[slot] == Where::Evictable) evictable_.erase(rank_[slot]);
  if (where_[slot] == Where::Pinned) pinned_.erase(rank_[slot]);
  where_[slot] = Where::None;
}

void LfuEvictor::pin(int32_t slot, int64_t uses) {
  unlist(slot);
  rank_[slot] = Rank{uses, ++clock_, slot};
  pinned_.insert(rank_[slot]);
  where_[slot] = Where::Pinned;
}

void LfuEvictor::loaded(int32_t slot) { pin(slot, 1); }  // the evicted token's count goes with it

void LfuEvictor::hit(int32_t slot) { pin(slot, rank_[slot].uses + 1); }

int32_t LfuEvictor::victim() const {
  if (!evictable_.empty()) return evictable_.begin()->slot;
  if (!pinned_.empty()) return pinned_.begin()->slot;  // only tokens of this step are left
  return kNoSlot;
}

void LfuEvictor::end_step() {
  for (const Rank& r : pinned_) where_[r.slot] = Where::Evictable;
  evictable_.merge(pinned_);  // ranks are unique (slot breaks ties), so every node moves
}

void LfuEvictor::clear() {
  evictable_.clear();
  pinned_.clear();
  std::fill(where_.begin(), where_.end(), Where::None);
  clock_ = 0;
}

std::unique_ptr<Evictor> make_evictor(EvictionPolicy policy, int64_t capacity) {
  if (policy == EvictionPolicy::Lru) return std::make_unique<LruEvictor>(capacity);
  return std::make_unique<LfuEvictor>(capacity);
}

}  // namespace hipstudio::offload
