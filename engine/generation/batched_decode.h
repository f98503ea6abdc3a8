#pragma once
// One decode step for several independent sequences at once: each brings its own KV cache (the
// caches may hold different lengths) and its own attention backend, and gets one new token. The
// row-wise work (norms, q/k/v projections, output projection, MLP) runs on all N rows together, so
// each weight matrix is read once per step for N tokens instead of N times: that read is what a
// decode step costs at batch 1. Attention stays per sequence, through that sequence's backend.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/backends/attention_backend.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"

namespace hipstudio {

struct BatchSequence {
  KVCache* cache = nullptr;               // the sequence's cache; advanced by one position
  // The sequence's backend. A backend that keeps state between decode steps (HiP's cached masks)
  // must be one object per sequence; one without per-sequence state (dense) may be shared.
  AttentionBackend* attention = nullptr;
};

// Runs tokens[i] at position sequences[i].cache->length() for every i, appends its key/value to that
// cache and returns float32 CPU logits [N, vocab], row i for sequence i: the same numbers as N
// batch-1 Transformer::forward(..., Phase::Decode) calls, up to the rounding of a matrix product
// over N rows instead of one. Always eager: the CUDA graphs of decode_graph.h are captured for one
// cache, and a batch is N of them. `timer`, when set, gets each layer's time (Transformer::LayerTimer:
// the N attention calls together, and the rest), waiting for the device after each part: breakdown
// runs only.
at::Tensor decode_batch(const Transformer& transformer, const std::vector<int32_t>& tokens,
                        const std::vector<BatchSequence>& sequences, const Transformer::LayerTimer& timer = {});

}  // namespace hipstudio
