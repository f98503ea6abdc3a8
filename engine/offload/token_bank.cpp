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
  slot_step_.assign(static_cast<size_t>(capacity_), -1);
  table_ = make_page_table(config.table, config.context_tokens, capacity_);
  evictor_ = make_evictor(config.policy, capacity_);
}

BankCounts TokenBank::access(const std::vector<int32_t>& tokens, std::vector<uint8_t>* outcome) {
  for (int32_t token : tokens) {
    if (token < 0 || token >= config_.context_tokens) {
      throw InputError("token bank: key position " + std::to_string(token) + " is outside the context [0, " +
                       std::to_string(config_.context_tokens) +
                       "); set the context length T to cover every position the run read");
    }
  }
  ++step_;
  if (outcome) outcome->assign(tokens.size(), kAccessNone);
  BankCounts c;
  const int64_t probes_before = table_->probes();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t token = tokens[i];
    ++c.accesses;
    // The kernel always asks the page table first, even with an empty bank.
    int32_t slot = table_->find(token);
    if (slot != kNoSlot) {
      if (slot_step_[slot] == step_) {
        throw InputError("token bank: key position " + std::to_string(token) +
                         " appears twice in one step; a step's positions must be unique");
      }
      ++c.hits;
      slot_step_[slot] = step_;
      evictor_->hit(slot);
      if (outcome) (*outcome)[i] = kAccessHit;
      continue;
    }
    ++c.misses;
    if (outcome) (*outcome)[i] = kAccessMiss;
    if (capacity_ == 0) continue;  // nothing to keep it in: read straight from host memory
    if (used_ < capacity_) {
      slot = static_cast<int32_t>(used_++);
    } else {
      slot = evictor_->victim();
      table_->erase(slot_token_[slot]);
      ++c.evictions;
    }
    slot_token_[slot] = token;
    slot_step_[slot] = step_;
    table_->insert(token, slot);
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
    slot_step_[s] = -1;
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
