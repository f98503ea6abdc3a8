#include "engine/model/context_plan.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <c10/core/ScalarType.h>

#include "engine/formats/errors.h"

namespace hipstudio {

namespace {
std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
}  // namespace

uint64_t available_memory_bytes(const RunDevice& run) {
  if (run.device.is_cpu()) {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit)
      if (key == "MemAvailable:") return kib * 1024;
    return 0;
  }
  return 0;  // CUDA: allocation failures are caught and reported by the caller
}

ContextPlan plan_context(const ModelConfig& c, const RunDevice& run, int64_t prompt_tokens, int64_t new_tokens,
                         int64_t context_limit, uint64_t available) {
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
  // CUDA attention (fused dense, HiP kernels) never holds a score matrix: larger chunks, fewer launches.
  plan.prefill_chunk = std::min<int64_t>(run.device.is_cuda() ? kCudaPrefillChunk : kDefaultPrefillChunk, prompt_tokens);
  const uint64_t elem = c10::elementSize(run.dtype);
  const uint64_t kv = 2ull * c.n_layers * c.n_kv_heads * static_cast<uint64_t>(total) * c.head_dim * elem;
  // One prefill chunk's float32 scores (twice: scores and probabilities) plus hidden activations.
  const uint64_t scores = run.device.is_cuda() ? 0 : 2ull * c.n_heads * plan.prefill_chunk * static_cast<uint64_t>(total) * 4;
  const uint64_t hidden = 8ull * plan.prefill_chunk * std::max(c.dim, c.hidden_dim) * 4;
  plan.bytes_needed = kv + scores + hidden;

  if (available == 0) available = available_memory_bytes(run);
  if (available > 0 && plan.bytes_needed > available)
    throw InputError("this run needs about " + mib(plan.bytes_needed) + " on " + run.device.str() + " (KV cache " +
                     mib(kv) + " for " + std::to_string(total) + " tokens, attention scratch " + mib(scores + hidden) +
                     ") but only " + mib(available) + " is free: use a shorter prompt, fewer --max-tokens" +
                     std::string(run.device.is_cpu() ? "" : ", or --device cpu"));
  return plan;
}

}  // namespace hipstudio
