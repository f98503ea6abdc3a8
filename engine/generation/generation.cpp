#include "engine/generation/generation.h"

#include <chrono>
#include <cmath>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "engine/formats/errors.h"
#include "engine/analysis/context_plan.h"
#include "engine/model/kv_cache.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/generation/prompt_prefill.h"
#include "engine/model/transformer.h"

namespace hipstudio {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Tokens of context when decoding the text a new token adds while streaming.
constexpr size_t kStreamWindow = 16;

// Length of the longest prefix of `text` that does not end inside a UTF-8 sequence: a multi-byte
// character made of several byte-fallback tokens is held back until its last byte arrives.
size_t complete_utf8_length(const std::string& text) {
  size_t n = text.size();
  size_t continuation = 0;
  while (continuation < 3 && continuation < n && (static_cast<unsigned char>(text[n - 1 - continuation]) & 0xC0) == 0x80)
    ++continuation;
  if (continuation == n) return n;
  const unsigned char lead = static_cast<unsigned char>(text[n - 1 - continuation]);
  const size_t expected = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return expected > continuation + 1 ? n - continuation - 1 : n;
}

}  // namespace

bool is_end_of_text(const ModelConfig& config, int32_t token) {
  return token == config.eos_id || (config.architecture == "llama2.c" && token == config.bos_id);
}

// generate() without the out-of-memory boundary: every tensor of the run lives in this frame.
static GenerationResult run_generation(std::shared_ptr<const Model> model, const std::string& prompt,
                                       const GenerationOptions& options, AttentionBackend& attention,
                                       const std::function<void(const std::string&)>& on_text) {
  c10::InferenceMode inference;
  GenerationResult result;
  result.prompt_ids = encode_prompt(*model, prompt);
  const ContextPlan plan = plan_context(model->config, model->run, static_cast<int64_t>(result.prompt_ids.size()),
                                        options.max_new_tokens, options.context_limit);
  Sampler sampler(options.sampling);
  Transformer transformer(model, plan.capacity);
  KVCache cache(model->config, model->run, plan.capacity);

  auto start = std::chrono::steady_clock::now();
  at::Tensor logits = prefill(transformer, result.prompt_ids, plan.prefill_chunk, cache, attention, LogitsFor::LastToken,
                               options.keep_going);
  result.prefill_seconds = seconds_since(start);

  // Text is emitted as the difference between decodes of the whole sequence, so pieces that only
  // become valid UTF-8 together (byte-fallback tokens) come out whole.
  const Tokenizer& tokenizer = *model->tokenizer;
  std::vector<int32_t> all = result.prompt_ids;
  std::string pending;  // streamed bytes not yet handed out (an unfinished UTF-8 character)

  start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    if (options.keep_going && !options.keep_going()) throw RunCancelled();
    const int32_t next = sampler.sample(logits[0]);
    if (options.stop_at_eos && is_end_of_text(model->config, next)) break;
    result.generated_ids.push_back(next);
    if (on_text) {
      // The bytes `next` adds: decode(window + next) minus decode(window) over the last few tokens.
      // Decoding is prefix-stable and both decodes start alike, so this equals the difference of
      // whole-sequence decodes without decoding the whole sequence every step.
      const size_t from = all.size() > kStreamWindow ? all.size() - kStreamWindow : 0;
      std::vector<int32_t> window(all.begin() + static_cast<std::ptrdiff_t>(from), all.end());
      const std::string before = tokenizer.decode(window);
      window.push_back(next);
      const std::string after = tokenizer.decode(window);
      pending += after.substr(std::min(before.size(), after.size()));
      const size_t complete = complete_utf8_length(pending);
      if (complete > 0) {
        on_text(pending.substr(0, complete));
        pending.erase(0, complete);
      }
    }
    all.push_back(next);
    if (step + 1 == options.max_new_tokens) break;
    logits = transformer.forward({next}, cache, attention, LogitsFor::LastToken, Phase::Decode);
  }
  result.decode_seconds = seconds_since(start);
  const std::string prompt_text = tokenizer.decode(result.prompt_ids);
  const std::string full = tokenizer.decode(all);
  result.completion = full.size() > prompt_text.size() ? full.substr(prompt_text.size()) : "";
  if (on_text && !pending.empty()) on_text(pending);
  return result;
}

GenerationResult generate(std::shared_ptr<const Model> model, const std::string& prompt,
                          const GenerationOptions& options, AttentionBackend& attention,
                          const std::function<void(const std::string&)>& on_text) {
  return guard_out_of_memory(model->run, "generate", [&] { return run_generation(model, prompt, options, attention, on_text); });
}

at::Tensor all_logits(std::shared_ptr<const Model> model, const std::vector<int32_t>& ids, AttentionBackend& attention,
                      int64_t context_limit) {
  return guard_out_of_memory(model->run, "the prefill", [&] {
    c10::InferenceMode inference;
    RunMemoryShape shape;
    shape.prompt_tokens = static_cast<int64_t>(ids.size());
    shape.all_logits = true;
    const ContextPlan plan = plan_run(model->config, model->run, shape, context_limit);
    Transformer transformer(model, plan.capacity);
    KVCache cache(model->config, model->run, plan.capacity);
    return prefill(transformer, ids, plan.prefill_chunk, cache, attention, LogitsFor::AllTokens);
  });
}

TextScore score_text(std::shared_ptr<const Model> model, const std::string& text, AttentionBackend& attention,
                     int64_t context_limit) {
  c10::InferenceMode inference;
  TextScore score;
  score.ids = encode_prompt(*model, text);
  if (score.ids.size() < 2) throw InputError("the text has a single token: perplexity needs at least two");
  // all_logits has its own out-of-memory boundary; the float64 copy of [n, vocab] gets one here.
  at::Tensor logprobs = guard_out_of_memory(model->run, "ppl", [&] {
    return at::log_softmax(all_logits(model, score.ids, attention, context_limit).to(at::kDouble), -1);
  });
  const int64_t n = static_cast<int64_t>(score.ids.size());
  double total = 0.0;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const double lp = logprobs[i][score.ids[i + 1]].item<double>();
    score.logprob.push_back(lp);
    total -= lp;
  }
  score.mean_nll = total / static_cast<double>(n - 1);
  score.perplexity = std::exp(score.mean_nll);
  return score;
}

}  // namespace hipstudio
