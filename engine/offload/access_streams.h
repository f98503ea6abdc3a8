#pragma once
// The key positions a HiP decode run read, per (decode step, HiP layer, query head): what the KV
// offloading simulator replays. Plain data; filled by the paired analysis.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hipstudio {

// Key positions read while decoding, per (step, HiP layer, head): the offloading simulator's input.
// HiP layer i (the streams' layer index) is model layer hip_layers[i]: the layers HiP replaces, in
// model order, which windowed layers interleave (Gemma 2/3, Qwen2's sliding window) rather than a
// run from first_layer on. Empty hip_layers (a capture that does not store them, of a model
// without windows): layer i is first_layer + i.
struct AccessStreams {
  int64_t steps = 0, layers = 0, heads = 0;   // layers: the HiP layers only
  int64_t first_layer = 0;                     // model layer of HiP layer 0 (hip_layers[0] when given)
  std::vector<int64_t> hip_layers;             // (layers) ascending model layers, or empty
  std::vector<std::vector<int32_t>> mask_keys;    // ((step * layers + layer) * heads + head)
  std::vector<std::vector<int32_t>> sparse_keys;  // same indexing
  const std::vector<int32_t>& mask(int64_t s, int64_t l, int64_t h) const { return mask_keys[(s * layers + l) * heads + h]; }
  const std::vector<int32_t>& sparse(int64_t s, int64_t l, int64_t h) const { return sparse_keys[(s * layers + l) * heads + h]; }
  // The model layer of HiP layer i.
  int64_t model_layer(int64_t i) const { return hip_layers.empty() ? first_layer + i : hip_layers[static_cast<size_t>(i)]; }
};

}  // namespace hipstudio
