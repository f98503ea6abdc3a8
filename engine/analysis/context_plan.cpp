#include "engine/analysis/context_plan.h"

#include <algorithm>
#include <string>

#include "engine/formats/errors.h"

namespace hipstudio {

namespace {

FreeMemory ask_missing(const RunDevice& run, FreeMemory free) {
  const FreeMemory system = (free.device == 0 || free.host == 0) ? free_memory(run) : FreeMemory{};
  if (free.device == 0) free.device = system.device;
  if (free.host == 0) free.host = system.host;
  return free;
}

// The shape with only its first `m` sequences.
RunMemoryShape first_sequences(RunMemoryShape shape, int64_t m) {
  if (!shape.sequence_prompt_tokens.empty()) shape.sequence_prompt_tokens.resize(static_cast<size_t>(m));
  shape.sequences = m;
  return shape;
}

// Fitting is monotonic in the sequence count (each adds a cache, a row of activations and logits).
int64_t largest_fitting(const ModelConfig& c, const RunDevice& run, const RunMemoryShape& shape, const FreeMemory& free,
                        int64_t max_sequences) {
  auto fits = [&](int64_t m) { return memory_fits(estimate_run_memory(c, run, first_sequences(shape, m)), run, free); };
  if (max_sequences < 1 || !fits(1)) return 0;
  int64_t lo = 1, hi = max_sequences;  // fits(lo) holds; the answer is in [lo, hi]
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace

int64_t largest_fitting_batch(const ModelConfig& c, const RunDevice& run, RunMemoryShape shape, FreeMemory free,
                              int64_t max_sequences) {
  if (!shape.sequence_prompt_tokens.empty())
    max_sequences = std::min<int64_t>(max_sequences, static_cast<int64_t>(shape.sequence_prompt_tokens.size()));
  if (shape.prefill_chunk <= 0)
    shape.prefill_chunk = run.device.is_cuda() ? shape.prompt_tokens : std::min<int64_t>(kDefaultPrefillChunk, shape.prompt_tokens);
  return largest_fitting(c, run, shape, ask_missing(run, free), max_sequences);
}

ContextPlan plan_run(const ModelConfig& c, const RunDevice& run, RunMemoryShape shape, int64_t context_limit,
                     FreeMemory free) {
  const int64_t prompt_tokens = shape.prompt_tokens, new_tokens = shape.new_tokens;
  if (prompt_tokens <= 0) throw InputError("the prompt is empty: pass some text with --prompt TEXT or --prompt @FILE");
  if (new_tokens < 0) throw InputError("--max-tokens must be >= 0");
  const int64_t limit = context_limit > 0 ? context_limit : c.max_seq_len;
  const int64_t total = prompt_tokens + new_tokens;
  if (total > limit)
    throw InputError("the prompt has " + std::to_string(prompt_tokens) + " tokens and " + std::to_string(new_tokens) +
                     " more are asked for (" + std::to_string(total) + " in all), but the context is " +
                     std::to_string(limit) + " tokens" +
                     (context_limit > 0 ? "" : " (the model's max_seq_len)") +
                     ": shorten the prompt, lower --max-tokens, or raise --context (quality past the "
                     "trained context is not guaranteed)");

  ContextPlan plan;
  plan.capacity = total;
  // CUDA attention (fused dense, HiP kernels) never holds a score matrix: the whole prompt in one call.
  if (shape.prefill_chunk <= 0)
    shape.prefill_chunk = run.device.is_cuda() ? prompt_tokens : std::min<int64_t>(kDefaultPrefillChunk, prompt_tokens);
  plan.prefill_chunk = shape.prefill_chunk;
  plan.memory = estimate_run_memory(c, run, shape);
  plan.bytes_needed = plan.memory.needed(MemoryPlace::Device) + plan.memory.needed(MemoryPlace::Host);

  free = ask_missing(run, free);
  const int64_t sequences =
      shape.sequence_prompt_tokens.empty() ? shape.sequences : static_cast<int64_t>(shape.sequence_prompt_tokens.size());
  if (sequences > 1 && !memory_fits(plan.memory, run, free)) {
    const int64_t largest = largest_fitting(c, run, shape, free, sequences - 1);
    try {
      check_memory_fits(plan.memory, run, free, shape);
    } catch (const InputError& e) {
      const std::string lengths = shape.sequence_prompt_tokens.empty()
                                      ? std::to_string(prompt_tokens) + " prompt tokens"
                                      : "the first of these prompt lengths";
      throw InputError(std::string(e.what()) + "; at " + lengths + " + " + std::to_string(new_tokens) +
                       " new tokens the largest --batch that fits is " + std::to_string(largest) +
                       (largest == 0 ? " (not even one sequence)" : ""));
    }
  }
  check_memory_fits(plan.memory, run, free, shape);
  return plan;
}

ContextPlan plan_context(const ModelConfig& c, const RunDevice& run, int64_t prompt_tokens, int64_t new_tokens,
                         int64_t context_limit, uint64_t available) {
  RunMemoryShape shape;
  shape.prompt_tokens = prompt_tokens;
  shape.new_tokens = new_tokens;
  FreeMemory free;
  if (available > 0) (run.device.is_cuda() ? free.device : free.host) = available;
  return plan_run(c, run, shape, context_limit, free);
}

}  // namespace hipstudio
