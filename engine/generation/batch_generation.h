#pragma once
// generate for N sequences of the same prompt decoded together (generate --batch N): each sequence
// is prefilled on its own (as generate prefills), then every step decodes one token for each
// unfinished sequence in one batched step (batched_decode.h), replayed from CUDA graphs where the
// run can (batch_decoder.h). Sequence i samples with seed + i, so sampled runs differ while greedy
// runs give N copies of generate's text.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backends/attention_backend.h"
#include "engine/generation/generation.h"
#include "engine/model/model.h"

namespace hipstudio {

struct BatchGenerationResult {
  std::vector<int32_t> prompt_ids;                  // with BOS, the same for every sequence
  std::vector<std::vector<int32_t>> generated_ids;  // (sequences) each sequence's new tokens
  std::vector<std::string> completions;             // (sequences) decoded text continuing the prompt
  double prefill_seconds = 0.0;                     // the N prefills, one after another
  double decode_seconds = 0.0;                      // every batched decode step, sampling included
  int64_t graphed_steps = 0;                        // batched steps replayed from CUDA graphs (batch_decoder.h)
};

// One backend per sequence (attention.size() = N >= 1); a backend with per-sequence state (HiP's
// cached masks) must not appear twice, one without (dense) may. A sequence that samples the end of text (with stop_at_eos)
// leaves the batch; the others go on until they stop or reach max_new_tokens. The KV caches of all N
// are planned (and refused when they do not fit) before the first prefill.
BatchGenerationResult generate_batch(std::shared_ptr<const Model> model, const std::string& prompt,
                                     const GenerationOptions& options, const std::vector<AttentionBackend*>& attention);

}  // namespace hipstudio
