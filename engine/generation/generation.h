#pragma once
// Text in, text out: prefill a prompt, decode new tokens with a sampler, and score a text's
// per-token log-probabilities (perplexity). All go through one attention backend.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "engine/runtime/run_cancelled.h"
#include <vector>

#include "engine/backends/attention_backend.h"
#include "engine/model/model.h"
#include "engine/generation/sampler.h"

namespace hipstudio {

struct GenerationOptions {
  int64_t max_new_tokens = 64;
  SamplingOptions sampling;
  bool stop_at_eos = true;     // also stops at BOS for llama2.c models (their sequence delimiter)
  int64_t context_limit = 0;   // 0 = the model's max_seq_len
  // Asked before each prefill chunk and each decode step; returning false stops the run with
  // RunCancelled (a GUI cancel must not wait for a long prompt's whole prefill).
  std::function<bool()> keep_going;
};

struct GenerationResult {
  std::vector<int32_t> prompt_ids;      // with BOS
  std::vector<int32_t> generated_ids;
  std::string completion;               // decoded text of generated_ids, as it continues the prompt
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;          // all decode steps, sampling included
};

// Whether `token` ends a generated text: EOS, or BOS for llama2.c models (their sequence delimiter).
bool is_end_of_text(const ModelConfig& config, int32_t token);

// on_text receives each newly decodable piece of text as it is generated (may be empty).
GenerationResult generate(std::shared_ptr<const Model> model, const std::string& prompt,
                          const GenerationOptions& options, AttentionBackend& attention,
                          const std::function<void(const std::string&)>& on_text = {});

struct TextScore {
  std::vector<int32_t> ids;        // [n] with BOS
  std::vector<double> logprob;     // [n - 1]: log p(ids[i + 1] | ids[0..i])
  double mean_nll = 0.0;
  double perplexity = 0.0;
};

TextScore score_text(std::shared_ptr<const Model> model, const std::string& text, AttentionBackend& attention,
                     int64_t context_limit = 0);

// Log-probabilities from a prefill over `ids` (no sampling): used by score_text and the tests.
// Returns float32 CPU logits [n, vocab] for every position.
at::Tensor all_logits(std::shared_ptr<const Model> model, const std::vector<int32_t>& ids,
                      AttentionBackend& attention, int64_t context_limit = 0);

}  // namespace hipstudio
