#pragma once
// Page tables of one offloading context: token position -> token-bank slot (paper section 3.3,
// "KV Token Index Translation"). Two kinds that must agree on every lookup and differ only in the
// memory they take and the probes they make, which is the trade-off the paper's table
// `tab:additional_offloading` measures (vector map: fast, O(T); hash map: O(bank), slower on GPU).
#include <cstdint>
#include <memory>
#include <vector>

namespace hipstudio::offload {

enum class PageTableKind { Vector, Hash };
const char* page_table_kind_name(PageTableKind kind);  // "vector", "hash"

constexpr int32_t kNoSlot = -1;  // find(): the token is not in the bank

// Token -> slot map. Tokens are in [0, T) (the bank checks that before calling). A probe is one
// table cell read or written; find, insert and erase all count theirs, so the stats can compare
// the two kinds' work per access.
class PageTable {
 public:
  virtual ~PageTable() = default;
  virtual int32_t find(int32_t token) = 0;               // slot, or kNoSlot when absent
  virtual void insert(int32_t token, int32_t slot) = 0;  // token must be absent
  virtual void erase(int32_t token) = 0;                 // token must be present
  virtual int64_t memory_bytes() const = 0;              // what the table itself would take on GPU
  int64_t probes() const { return probes_; }             // cumulative since construction

 protected:
  int64_t probes_ = 0;
};

// Length-T array of slots: one probe per operation, T * 4 bytes however small the bank.
class VectorPageTable final : public PageTable {
 public:
  explicit VectorPageTable(int64_t context_tokens);
  int32_t find(int32_t token) override;
  void insert(int32_t token, int32_t slot) override;
  void erase(int32_t token) override;
  int64_t memory_bytes() const override;

 private:
  std::vector<int32_t> slot_of_;  // (T) slot of each token position, kNoSlot when not resident
};

// Open addressing with linear probing. Capacity is a power of two >= 2 x bank size, so the load
// factor stays <= 1/2 and probe runs stay short. Deletion shifts later entries of the run back into
// the hole (no tombstones), so lookups never slow down as the bank churns through evictions.
class HashPageTable final : public PageTable {
 public:
  explicit HashPageTable(int64_t bank_tokens);
  int32_t find(int32_t token) override;
  void insert(int32_t token, int32_t slot) override;
  void erase(int32_t token) override;
  int64_t memory_bytes() const override;
  int64_t capacity() const { return static_cast<int64_t>(keys_.size()); }
  int64_t size() const { return size_; }
  int64_t home_bucket(int32_t token) const;  // where probing starts (public so tests can collide)

 private:
  int64_t locate(int32_t token);  // cell holding token, or -1; counts probes
  std::vector<int32_t> keys_;     // (capacity) token, or kEmptyCell
  std::vector<int32_t> slots_;    // (capacity) bank slot of keys_[i]
  int log2_capacity_ = 1;
  int64_t size_ = 0;
};

// context_tokens sizes the vector map, bank_tokens the hash map; the other is ignored.
std::unique_ptr<PageTable> make_page_table(PageTableKind kind, int64_t context_tokens, int64_t bank_tokens);

}  // namespace hipstudio::offload
