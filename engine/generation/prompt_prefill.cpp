#include "engine/generation/prompt_prefill.h"

#include <ATen/ATen.h>

#include "engine/formats/errors.h"
#include "engine/runtime/run_cancelled.h"

namespace hipstudio {

std::vector<int32_t> encode_prompt(const Model& model, const std::string& prompt) {
  if (prompt.empty()) throw InputError("the prompt is empty: pass some text with --prompt TEXT or --prompt @FILE");
  std::vector<int32_t> ids = model.tokenizer->encode(prompt, /*add_bos=*/true);
  for (int32_t id : ids)
    if (id < 0 || id >= model.config.vocab_size)
      throw InputError("the tokenizer produced token id " + std::to_string(id) + " outside the model's vocabulary of " +
                       std::to_string(model.config.vocab_size) + "; the tokenizer does not belong to this model");
  return ids;
}

at::Tensor prefill(const Transformer& transformer, const std::vector<int32_t>& ids, int64_t chunk, KVCache& cache,
                   AttentionBackend& attention, LogitsFor which, const std::function<bool()>& keep_going) {
  const int64_t multiple = attention.chunk_multiple();
  chunk = (chunk + multiple - 1) / multiple * multiple;
  std::vector<at::Tensor> pieces;
  for (size_t begin = 0; begin < ids.size(); begin += static_cast<size_t>(chunk)) {
    if (keep_going && !keep_going()) throw RunCancelled();
    const size_t end = std::min(ids.size(), begin + static_cast<size_t>(chunk));
    std::vector<int32_t> part(ids.begin() + static_cast<std::ptrdiff_t>(begin), ids.begin() + static_cast<std::ptrdiff_t>(end));
    at::Tensor logits = transformer.forward(part, cache, attention, which);
    if (which == LogitsFor::AllTokens || end == ids.size()) pieces.push_back(logits);
  }
  return pieces.size() == 1 ? pieces[0] : at::cat(pieces, 0);
}

}  // namespace hipstudio
