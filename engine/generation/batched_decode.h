#pragma once
// One decode step for several independent sequences at once: each brings its own KV cache (the
// caches may hold different lengths) and its own attention backend, and gets one new token. The
// row-wise work (norms, q/k/v projections, output projection, MLP) runs on all N rows together, so
// each weight matrix is read once per step for N tokens instead of N times: that read is what a
// decode step costs at batch 1. Attention covers every sequence in one call where their caches are
// slots of one BatchKVStorage and the backend can; else it runs per sequence, through its backend.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/backends/attention_backend.h"
#include "engine/generation/batch_kv_storage.h"
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
// over N rows instead of one (and, in one attention call, of the split of each sequence's keys).
// Eager: the reference that the batched CUDA graphs (batch_decode_graph.h; batch_decoder.h picks
// them or this step) reproduce. `storage`, when set and every sequence's cache is one of its slots,
// in ascending slot order: each layer writes the batch's new keys and values in one copy each and
// asks the first sequence's backend to attend every sequence in one call (AttentionBackend::
// attend_batch: one launch on CUDA for dense in bf16/f16 and for HiP); otherwise, or where it
// declines, each sequence attends through its own backend.
// `layers_in_one_call`, when set, gets how many layers attended the batch in one call. `timer`, when
// set, gets each layer's time (Transformer::LayerTimer: the attention, every sequence's together,
// and the rest), waiting for the device after each part: breakdown runs only.
at::Tensor decode_batch(const Transformer& transformer, const std::vector<int32_t>& tokens,
                        const std::vector<BatchSequence>& sequences, const Transformer::LayerTimer& timer = {},
                        BatchKVStorage* storage = nullptr, int64_t* layers_in_one_call = nullptr);

}  // namespace hipstudio
