#include "engine/generation/batch_generation.h"

#include <chrono>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/generation/batch_decoder.h"
#include "engine/generation/batch_kv_storage.h"
#include "engine/analysis/context_plan.h"
#include "engine/model/kv_cache.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/generation/prompt_prefill.h"
#include "engine/runtime/run_cancelled.h"
#include "engine/generation/sampler.h"
#include "engine/model/transformer.h"

namespace hipstudio {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// generate_batch without the out-of-memory boundary: every tensor of the run lives in this frame.
BatchGenerationResult run_batch(std::shared_ptr<const Model> model, const std::string& prompt,
                                const GenerationOptions& options, const std::vector<AttentionBackend*>& attention) {
  c10::InferenceMode inference;
  const size_t n = attention.size();
  BatchGenerationResult result;
  result.prompt_ids = encode_prompt(*model, prompt);
  RunMemoryShape shape;
  shape.prompt_tokens = static_cast<int64_t>(result.prompt_ids.size());
  shape.new_tokens = options.max_new_tokens;
  shape.sequences = static_cast<int64_t>(n);
  const ContextPlan plan = plan_run(model->config, model->run, shape, options.context_limit);

  // One Transformer (its RoPE tables serve every position of every sequence), N caches.
  Transformer transformer(model, plan.capacity);
  // The caches as slots of one storage, so that a decode step attends every sequence in one call.
  BatchKVStorage storage(model->config, model->run, std::vector<int64_t>(n, plan.capacity));
  std::vector<KVCache*> caches;
  std::vector<Sampler> samplers;
  for (size_t i = 0; i < n; ++i) {
    caches.push_back(&storage.slot(static_cast<int64_t>(i)));
    SamplingOptions sampling = options.sampling;
    sampling.seed += i;  // distinct streams for sampled runs; greedy ignores the seed
    samplers.emplace_back(sampling);
  }

  auto start = std::chrono::steady_clock::now();
  std::vector<at::Tensor> rows;  // (active) each active sequence's last logits [vocab]
  for (size_t i = 0; i < n; ++i)
    rows.push_back(prefill(transformer, result.prompt_ids, plan.prefill_chunk, *caches[i], *attention[i],
                           LogitsFor::LastToken, options.keep_going)[0]);
  result.prefill_seconds = seconds_since(start);

  result.generated_ids.assign(n, {});
  std::vector<size_t> active(n);  // the sequences still generating, in batch-row order
  for (size_t i = 0; i < n; ++i) active[i] = i;
  // Replayed from CUDA graphs where the run can (batch_decoder.h); a sequence leaving the batch
  // makes a new set, captured again.
  BatchDecoder decoder(transformer, &storage);
  start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < options.max_new_tokens && !active.empty(); ++step) {
    if (options.keep_going && !options.keep_going()) throw RunCancelled();
    std::vector<size_t> still;
    std::vector<int32_t> tokens;
    std::vector<BatchSequence> batch;
    for (size_t r = 0; r < active.size(); ++r) {
      const size_t i = active[r];
      const int32_t next = samplers[i].sample(rows[r]);
      if (options.stop_at_eos && is_end_of_text(model->config, next)) continue;  // this sequence is done
      result.generated_ids[i].push_back(next);
      still.push_back(i);
      tokens.push_back(next);
      batch.push_back({caches[i], attention[i]});
    }
    active = std::move(still);
    if (step + 1 == options.max_new_tokens || active.empty()) break;
    const at::Tensor logits = decoder.step(tokens, batch);  // [active, vocab]
    rows.clear();
    for (int64_t r = 0; r < logits.size(0); ++r) rows.push_back(logits[r]);
  }
  result.decode_seconds = seconds_since(start);
  result.graphed_steps = decoder.graphed_steps();

  const Tokenizer& tokenizer = *model->tokenizer;
  const std::string prompt_text = tokenizer.decode(result.prompt_ids);
  for (const std::vector<int32_t>& generated : result.generated_ids) {
    std::vector<int32_t> all = result.prompt_ids;
    all.insert(all.end(), generated.begin(), generated.end());
    const std::string full = tokenizer.decode(all);
    result.completions.push_back(full.size() > prompt_text.size() ? full.substr(prompt_text.size()) : "");
  }
  return result;
}

}  // namespace

BatchGenerationResult generate_batch(std::shared_ptr<const Model> model, const std::string& prompt,
                                     const GenerationOptions& options, const std::vector<AttentionBackend*>& attention) {
  if (attention.empty()) throw std::invalid_argument("generate_batch needs at least one sequence");
  for (AttentionBackend* a : attention)
    if (!a) throw std::invalid_argument("generate_batch: a sequence without an attention backend");
  return guard_out_of_memory(model->run, "generate", [&] { return run_batch(model, prompt, options, attention); });
}

}  // namespace hipstudio
