#pragma once
// Replays the key reads of a HiP decode run (AccessStreams, filled by the paired analysis) through
// the paper's two offloading contexts and counts hits, misses and PCIe bytes per layer, head and
// step. Plain C++: no LibTorch, runs on the worker thread or in a capture tool.
#include <cstdint>
#include <vector>

#include "engine/offload/access_streams.h"
#include "engine/offload/offload_result.h"

namespace hipstudio::offload {

struct OffloadConfig {
  double cache_factor = 2.0;       // c in k_cache = c * (k / b_sk) * log2 T
  int64_t mask_bank_tokens = 0;    // mask-estimation bank per head; 0: c * (k / b_sk) * log2 T
  int64_t sparse_bank_tokens = 0;  // sparse-attention bank per head; 0: k
  PageTableKind table = PageTableKind::Vector;
  EvictionPolicy policy = EvictionPolicy::Lru;
  int64_t k = 512;                 // tokens kept per query (mask_k)
  int64_t b_sk = 2;                // key block size
  int64_t context_tokens = 1;      // T: every key position is in [0, T)
  int64_t mask_bytes_per_token = 0;    // key only: layers read keys alone while estimating the mask
  int64_t sparse_bytes_per_token = 0;  // key + value
  bool build_access_map = true;    // the (steps, T) map costs steps * T bytes per context
};

// ceil(c * (k / b_sk) * log2 T): the paper's k_cache. Throws InputError on bad arguments.
int64_t default_mask_bank_tokens(double cache_factor, int64_t k, int64_t b_sk, int64_t context_tokens);
// The bank sizes a config resolves to (its explicit size, or the default above / k).
int64_t mask_bank_tokens(const OffloadConfig& config);
int64_t sparse_bank_tokens(const OffloadConfig& config);

// Throw InputError naming the problem: negative sizes, b_sk < 1, T < 1, c < 0 or not finite; and
// for streams, vectors of the wrong length, positions outside [0, T) or not strictly ascending, and
// hip_layers (when given) not `layers` ascending model layers starting at first_layer.
void validate_config(const OffloadConfig& config);
void validate_streams(const AccessStreams& streams, int64_t context_tokens);

// Both contexts over every layer, head and step. Layers are the streams' HiP layers (index i is
// model layer streams.model_layer(i); OffloadResult::hip_layers lists them).
OffloadResult simulate_offloading(const AccessStreams& streams, const OffloadConfig& config);

// The streams' index of `model_layer`, or -1 where HiP does not replace it (a windowed layer, one of
// the first l_d full-attention layers): the layer arguments below take this index.
int64_t hip_layer_index(const AccessStreams& streams, int64_t model_layer);

// The access map of one (layer, head) bank (the stored map folds all of them): replays that bank.
AccessMap head_access_map(const AccessStreams& streams, const OffloadConfig& config, OffloadContext context,
                          int64_t layer, int64_t head);

// Hit ratio per bank size for one context: each size replays the stream of every (layer, head),
// or of one when layer and head are >= 0. Sizes are taken as given (any order, 0 allowed).
std::vector<HitRatioPoint> hit_ratio_curve(const AccessStreams& streams, const OffloadConfig& config,
                                           OffloadContext context, const std::vector<int64_t>& bank_sizes,
                                           int64_t layer = -1, int64_t head = -1);

}  // namespace hipstudio::offload
