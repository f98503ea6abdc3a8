#pragma once
// Before a run: does it fit the model's context and the device's memory? Refuses with the numbers
// and a way out instead of failing half-way with an out-of-memory error (memory_estimate.h counts).
#include <cstdint>

#include "engine/formats/model_config.h"
#include "engine/runtime/device.h"
#include "engine/analysis/memory_estimate.h"

namespace hipstudio {

struct ContextPlan {
  int64_t capacity = 0;          // KV-cache positions to allocate (prompt + new tokens)
  int64_t prefill_chunk = 0;     // prompt tokens per forward call (bounds the attention scores' memory)
  uint64_t bytes_needed = 0;     // what the run still allocates (device + host; weights excluded)
  MemoryEstimate memory;         // line by line
};

// Positions the forward pass runs per prefill call on the CPU, where dense attention holds the
// scores [n_heads, chunk, positions]. CUDA attention (fused dense, HiP kernels) holds no scores, so
// a CUDA prefill is one call over the whole prompt (one causal attention per layer: the fused
// kernels' fast path, no explicit mask) whose row-wise work runs in blocks of kCudaPrefillRows.
inline constexpr int64_t kDefaultPrefillChunk = 512;
inline constexpr int64_t kCudaPrefillRows = 16384;

// context_limit <= 0 means the model's max_seq_len. available_bytes = 0 means "ask the system"; a
// figure given replaces the free memory of the run device (tests inject one).
// Throws InputError when the tokens exceed the context or the memory estimate exceeds what is free.
ContextPlan plan_context(const ModelConfig& config, const RunDevice& run, int64_t prompt_tokens,
                         int64_t new_tokens, int64_t context_limit = 0, uint64_t available_bytes = 0);

// The same for any run shape (shape.prefill_chunk 0: the default for the device; all logits, a
// paired analysis). `free` with zeros asks the system for the missing figures.
// A batch (shape.sequences > 1, or shape.sequence_prompt_tokens) that does not fit is refused with
// the largest that does (largest_fitting_batch) in the message.
ContextPlan plan_run(const ModelConfig& config, const RunDevice& run, RunMemoryShape shape, int64_t context_limit,
                     FreeMemory free = {});

// The most sequences of `shape` that fit together in `free` (zeros: ask the system): with
// shape.sequence_prompt_tokens, the longest prefix of that list; otherwise that many sequences of
// shape.prompt_tokens, up to max_sequences. 0: not even one. The context is not checked here.
int64_t largest_fitting_batch(const ModelConfig& config, const RunDevice& run, RunMemoryShape shape, FreeMemory free,
                              int64_t max_sequences);

}  // namespace hipstudio
