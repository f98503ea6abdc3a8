#pragma once
// What a command can check about its model before the weights load: the config (llama2.c header or
// config.json) and the tokenizer, read in milliseconds. Commands check their prompt against the
// context, layer and head indices against the model, here; loading the weights comes after.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/cli_paths.h"
#include "app/common/model_options.h"
#include "engine/formats/model_config.h"
#include "engine/formats/model_source.h"
#include "engine/tokenizer/tokenizer.h"

namespace hipstudio::app {

struct ModelPreflight {
  ModelSource source;
  ModelConfig config;
  std::shared_ptr<const Tokenizer> tokenizer;  // null only when not required and the source has none
  int64_t context = 0;                         // --context, or the model's max_seq_len

  // Token ids of a text as the run will see it (BOS included).
  std::vector<int32_t> encode(const std::string& text) const;
};

// The model's files a command reads (llama2.c: the checkpoint; Hugging Face: config.json, the
// weights and the index; the tokenizer), so that no output can name one of them.
std::vector<PathArg> model_input_files(const ModelOptions& options, bool require_tokenizer = true);

// Throws InputError for missing or corrupt model/tokenizer files, as loading would.
ModelPreflight preflight_model(const ModelOptions& options, bool require_tokenizer = true);

// Refuses a text of `text_tokens` tokens plus `new_tokens` more (asked for with `new_tokens_option`,
// empty when the command adds none) that the context cannot hold. `what` is "prompt" or "text",
// `text_option` its option: the message names exactly the options that fix it.
void check_fits_context(const ModelPreflight& model, int64_t text_tokens, int64_t new_tokens, const std::string& what,
                        const std::string& text_option, const std::string& new_tokens_option);

// Refuses a layer index outside the model, naming `option` (its spelling as the user wrote it) and the range.
void check_layer_index(const ModelPreflight& model, int64_t layer, const std::string& option);

}  // namespace hipstudio::app
