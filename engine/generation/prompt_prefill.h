#pragma once
// The two first steps of every text run, shared by generate, generate_batch and score_text: turn the
// prompt into token ids the model accepts, and run them through the model in chunks.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/backends/attention_backend.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "engine/model/transformer.h"

namespace hipstudio {

// The prompt's ids with BOS. Throws InputError for an empty prompt or an id outside the vocabulary
// (a tokenizer that belongs to another model).
std::vector<int32_t> encode_prompt(const Model& model, const std::string& prompt);

// Runs `ids` through the model in chunks of `chunk` tokens (rounded up to the backend's multiple),
// returning the logits `which` asks for (float32 CPU). keep_going is asked before each chunk; false
// throws RunCancelled.
at::Tensor prefill(const Transformer& transformer, const std::vector<int32_t>& ids, int64_t chunk, KVCache& cache,
                   AttentionBackend& attention, LogitsFor which, const std::function<bool()>& keep_going = {});

}  // namespace hipstudio
