#include "engine/analysis/context_plan.h"

#include <algorithm>
#include <string>

#include "engine/formats/errors.h"

namespace hipstudio {

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

  const FreeMemory system = (free.device == 0 || free.host == 0) ? free_memory(run) : FreeMemory{};
  if (free.device == 0) free.device = system.device;
  if (free.host == 0) free.host = system.host;
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
