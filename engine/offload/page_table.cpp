#include "engine/offload/page_table.h"

#include <stdexcept>

namespace hipstudio::offload {

namespace {
constexpr int32_t kEmptyCell = -1;  // token positions are >= 0
}  // namespace

const char* page_table_kind_name(PageTableKind kind) {
  return kind == PageTableKind::Vector ? "vector" : "hash";
}

// ---- vector map ------------------------------------------------------------------------------

VectorPageTable::VectorPageTable(int64_t context_tokens)
    : slot_of_(static_cast<size_t>(context_tokens), kNoSlot) {}

int32_t VectorPageTable::find(int32_t token) {
  ++probes_;
  return slot_of_[static_cast<size_t>(token)];
}

void VectorPageTable::insert(int32_t token, int32_t slot) {
  ++probes_;
  slot_of_[static_cast<size_t>(token)] = slot;
}

void VectorPageTable::erase(int32_t token) {
  ++probes_;
  slot_of_[static_cast<size_t>(token)] = kNoSlot;
}

int64_t VectorPageTable::memory_bytes() const {
  return static_cast<int64_t>(slot_of_.size() * sizeof(int32_t));
}

// ---- linear-probing hash map -----------------------------------------------------------------

HashPageTable::HashPageTable(int64_t bank_tokens) {
  // At least 2 cells so the hash shift below stays < 64 and an empty cell always exists.
  int64_t want = bank_tokens * 2 > 2 ? bank_tokens * 2 : 2;
  while ((int64_t{1} << log2_capacity_) < want) ++log2_capacity_;
  keys_.assign(size_t{1} << log2_capacity_, kEmptyCell);
  slots_.assign(keys_.size(), kNoSlot);
}

int64_t HashPageTable::home_bucket(int32_t token) const {
  // Fibonacci hashing: the top bits of token * 2^64/phi. Nearby positions (the common case, HiP
  // reads runs of neighbouring blocks) land far apart instead of forming one long probe run.
  uint64_t h = static_cast<uint64_t>(static_cast<uint32_t>(token)) * 0x9E3779B97F4A7C15ull;
  return static_cast<int64_t>(h >> (64 - log2_capacity_));
}

int64_t HashPageTable::locate(int32_t token) {
  const int64_t mask = capacity() - 1;
  for (int64_t i = home_bucket(token);; i = (i + 1) & mask) {
    ++probes_;
    if (keys_[i] == token) return i;
    if (keys_[i] == kEmptyCell) return -1;  // load <= 1/2: an empty cell ends every run
  }
}

int32_t HashPageTable::find(int32_t token) {
  int64_t cell = locate(token);
  return cell < 0 ? kNoSlot : slots_[cell];
}

void HashPageTable::insert(int32_t token, int32_t slot) {
  if (size_ + 1 > capacity() / 2) {
    throw std::logic_error("HashPageTable: more tokens than the bank it was sized for");
  }
  const int64_t mask = capacity() - 1;
  for (int64_t i = home_bucket(token);; i = (i + 1) & mask) {
    ++probes_;
    if (keys_[i] == kEmptyCell) {
      keys_[i] = token;
      slots_[i] = slot;
      ++size_;
      return;
    }
  }
}

void HashPageTable::erase(int32_t token) {
  int64_t hole = locate(token);
  if (hole < 0) throw std::logic_error("HashPageTable: erase of a token that is not resident");
  // Backward-shift deletion: walk the rest of the run; an entry whose home lies cyclically in
  // (hole, j] must stay (moving it before its home would hide it); any other entry moves into the
  // hole, which then moves to where that entry was.
  const int64_t mask = capacity() - 1;
  for (int64_t j = (hole + 1) & mask;; j = (j + 1) & mask) {
    ++probes_;
    if (keys_[j] == kEmptyCell) break;
    int64_t home = home_bucket(keys_[j]);
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) {
      keys_[hole] = keys_[j];
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  keys_[hole] = kEmptyCell;
  slots_[hole] = kNoSlot;
  --size_;
}

int64_t HashPageTable::memory_bytes() const {
  return capacity() * static_cast<int64_t>(sizeof(int32_t) * 2);  // key + slot per cell
}

std::unique_ptr<PageTable> make_page_table(PageTableKind kind, int64_t context_tokens, int64_t bank_tokens) {
  if (kind == PageTableKind::Vector) return std::make_unique<VectorPageTable>(context_tokens);
  return std::make_unique<HashPageTable>(bank_tokens);
}

}  // namespace hipstudio::offload
