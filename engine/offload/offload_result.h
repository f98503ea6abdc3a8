#pragma once
// What the KV-offloading simulator reports: plain data, read by the GUI panels and capture files.
#include <cstdint>
#include <vector>

#include "engine/offload/token_bank.h"

namespace hipstudio::offload {

// The paper's two offloading contexts (section 3.3): keys read by mask estimation, and the K/V
// pairs read by sparse attention.
enum class OffloadContext { Mask, Sparse };
const char* offload_context_name(OffloadContext context);  // "mask", "sparse"

// Which token positions each step read and whether they hit; cells hold AccessOutcome values.
struct AccessMap {
  int64_t steps = 0;           // rows: decode steps
  int64_t tokens = 0;          // columns: token positions, T
  std::vector<uint8_t> cells;  // (steps, tokens) row-major; kAccessNone / kAccessHit / kAccessMiss
  uint8_t at(int64_t step, int64_t token) const { return cells[static_cast<size_t>(step * tokens + token)]; }
};

// One context over the whole run. Every head has its own bank, as in the paper's per-head caches:
// heads read different keys, so one shared bank would mix their locality.
struct ContextStats {
  OffloadContext context = OffloadContext::Mask;
  int64_t bank_tokens = 0;       // slots per bank (per layer and head), as configured
  int64_t bytes_per_token = 0;   // per miss
  int64_t page_table_bytes = 0;  // one bank's page table
  std::vector<BankCounts> per_step;        // (layer, head, step) row-major
  std::vector<BankCounts> per_head;        // (layer, head) sums over steps
  std::vector<BankCounts> per_layer;       // (layer) sums over heads and steps
  std::vector<BankCounts> per_step_total;  // (step) sums over layers and heads
  BankCounts total;
  AccessMap map;  // all layers and heads folded by the worst outcome (miss > hit > none); empty
                  // when OffloadConfig::build_access_map is off
};

struct OffloadResult {
  int64_t steps = 0, layers = 0, heads = 0;  // as in the AccessStreams
  int64_t first_layer = 0;                   // model layer of HiP layer 0
  std::vector<int64_t> hip_layers;           // (layers) model layer of each HiP layer (AccessStreams::model_layer)
  int64_t context_tokens = 0;                // T
  ContextStats mask;
  ContextStats sparse;
  const ContextStats& of(OffloadContext c) const { return c == OffloadContext::Mask ? mask : sparse; }
  const BankCounts& step_counts(OffloadContext c, int64_t layer, int64_t head, int64_t step) const {
    return of(c).per_step[static_cast<size_t>((layer * heads + head) * steps + step)];
  }
};

// One point of a hit-ratio curve: the same stream replayed with a bank of bank_tokens slots.
struct HitRatioPoint {
  int64_t bank_tokens = 0;
  BankCounts counts;       // summed over the heads replayed
  double hit_ratio = 0.0;  // counts.hits / counts.accesses
};

}  // namespace hipstudio::offload
