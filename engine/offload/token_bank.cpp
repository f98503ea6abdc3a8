#include "engine/offload/token_bank.h"

#include <algorithm>
#include <string>

#include "engine/formats/errors.h"

namespace hipstudio::offload {

BankCounts& BankCounts::operator+=(const BankCounts& o) {
  accesses += o.accesses;
  hits += o.hits;
  misses += o.misses;
  bytes += o.bytes;
  evictions += o.evictions;
  probes += o.probes;
  return *this;
}

double hit_ratio(const BankCounts& c) {
  return c.accesses == 0 ? 0.0 : static_cast<double>(c.hits) / static_cast<double>(c.accesses);
}

TokenBank::TokenBank(const BankConfig& config) : config_(config) {
  if (config.capacity < 0) {
    throw InputError("token bank: capacity " + std::to_string(config.capacity) +
                     " is negative; give 0 (no bank) or more token slots");
  }
  if (config.context_tokens < 1 || config.context_tokens > INT32_MAX) {
    throw InputError("token bank: context length T = " + std::to_string(config.context_tokens) +
                     " is outside [1, 2^31); give the run's context length in tokens");
  }
  if (config.bytes_per_token < 0) {
    throw InputError("token bank: bytes per token " + std::to_string(config.bytes_per_token) +
                     " is negative; give the size of one token's key (and value) in bytes");
  }
  capacity_ = std::min(config.capacity, config.context_tokens);
  slot_token_.assign(static_cast<size_t>(capacity_), -1);
  table_ = make_page_table(config.table, config.context_tokens, capacity_);
  evictor_ = make_evictor(config.policy, capacity_);
}

void TokenBank::check_step(const std::vector<int32_t>& tokens) {
  bool ascending = true;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.context_tokens) {
      throw InputError("token bank: key position " + std::to_string(tokens[i]) + " is outside the context [0, " +
                       std::to_string(config_.context_tokens) +
                       "); set the context length T to cover every position the run read");
    }
    ascending = ascending && (i == 0 || tokens[i - 1] < tokens[i]);
  }
  if (ascending) return;  // the streams' own order: unique without sorting
  sorted_.assign(tokens.begin(), tokens.end());
  std::sort(sorted_.begin(), sorted_.end());
  auto repeat = std::adjacent_find(sorted_.begin(), sorted_.end());
  if (repeat != sorted_.end()) {
    throw InputError("token bank: key position " + std::to_string(*repeat) +
                     " appears twice in one step; a step's positions must be unique");
  }
}

BankCounts TokenBank::access(const std::vector<int32_t>& tokens, std::vector<uint8_t>* outcome) {
  check_step(tokens);
  const size_t n = tokens.size();
  if (outcome) outcome->assign(n, kAccessNone);
  BankCounts c;
  c.accesses = static_cast<int64_t>(n);
  const int64_t probes_before = table_->probes();
  // Phase 1: look everything up (the page table is asked even with an empty bank, as the kernel does).
  hit_slot_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    hit_slot_[i] = table_->find(tokens[i]);
    if (hit_slot_[i] != kNoSlot) evictor_->reserve(hit_slot_[i]);
  }
  // Phase 2: read in step order.
  for (size_t i = 0; i < n; ++i) {
    if (hit_slot_[i] != kNoSlot) {
      ++c.hits;
      evictor_->hit(hit_slot_[i]);
      if (outcome) (*outcome)[i] = kAccessHit;
      continue;
    }
    ++c.misses;
    if (outcome) (*outcome)[i] = kAccessMiss;
    int32_t slot;
    if (used_ < capacity_) {
      slot = static_cast<int32_t>(used_++);
    } else {
      slot = capacity_ == 0 ? kNoSlot : evictor_->victim();
      if (slot == kNoSlot) continue;  // nowhere to keep it: read straight from host memory
      table_->erase(slot_token_[slot]);
      ++c.evictions;
    }
    slot_token_[slot] = tokens[i];
    table_->insert(tokens[i], slot);
    evictor_->loaded(slot);
  }
  evictor_->end_step();
  c.bytes = c.misses * config_.bytes_per_token;
  c.probes = table_->probes() - probes_before;
  return c;
}

void TokenBank::reset() {
  for (int64_t s = 0; s < used_; ++s) {
    table_->erase(slot_token_[s]);  // O(bank), not O(T): the vector map is not reallocated
    slot_token_[s] = -1;
  }
  used_ = 0;
  evictor_->clear();
}

std::vector<int32_t> TokenBank::resident_tokens() const {
  std::vector<int32_t> out(slot_token_.begin(), slot_token_.begin() + used_);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hipstudio::offload
