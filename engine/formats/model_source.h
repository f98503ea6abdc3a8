#pragma once
// Where a model's files are: resolves what the user typed for --model (nothing, a llama2.c file,
// or a directory) into concrete paths before anything is loaded.
#include <string>

namespace hipstudio {

enum class ModelFormat { Llama2c, HuggingFace };

struct ModelSource {
  ModelFormat format = ModelFormat::Llama2c;
  std::string display_name;    // for messages and captures: "stories15M (default)" or the path
  std::string checkpoint;      // llama2.c: model file; HF: the model directory
  std::string tokenizer;       // llama2.c: tokenizer.bin; HF: tokenizer.json (may be empty)
};

// ${XDG_CACHE_HOME:-$HOME/.cache}/hipstudio/models/stories15M
std::string default_model_dir();

// Empty `model` means the default model. `tokenizer` overrides the tokenizer file. Throws InputError
// when the files are not there, saying how to get them. With require_tokenizer false, a Hugging Face
// directory without tokenizer.json resolves with an empty `tokenizer` (benchmarks feed token ids).
ModelSource resolve_model_source(const std::string& model, const std::string& tokenizer = "",
                                 bool require_tokenizer = true);

}  // namespace hipstudio
