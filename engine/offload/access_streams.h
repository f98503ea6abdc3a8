#pragma once
// The key positions a HiP decode run read, per (decode step, HiP layer, query head): what the KV
// offloading simulator replays. Plain data; filled by the paired analysis.
#include <cstdint>
#include <vector>

namespace hipstudio {

// Key positions read while decoding, per (step, HiP layer, head): the offloading simulator's input.
struct AccessStreams {
  int64_t steps = 0, layers = 0, heads = 0;   // layers: the HiP layers only, first_layer onwards
  int64_t first_layer = 0;                     // = l_d
  std::vector<std::vector<int32_t>> mask_keys;    // ((step * layers + layer) * heads + head)
  std::vector<std::vector<int32_t>> sparse_keys;  // same indexing
  const std::vector<int32_t>& mask(int64_t s, int64_t l, int64_t h) const { return mask_keys[(s * layers + l) * heads + h]; }
  const std::vector<int32_t>& sparse(int64_t s, int64_t l, int64_t h) const { return sparse_keys[(s * layers + l) * heads + h]; }
};

}  // namespace hipstudio
