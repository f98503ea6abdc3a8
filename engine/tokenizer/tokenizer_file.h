#pragma once
// Loads a tokenizer file by what the file holds, not by the model's format: a llama2.c model may
// come with a Hugging Face tokenizer.json (as `hipstudio convert` writes) and a Hugging Face model
// with llama2.c's tokenizer.bin.
#include <memory>
#include <optional>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace hipstudio {

enum class TokenizerFileFormat { Llama2cBin, HfJson };

// JSON when the file's name ends in .json or its first non-blank byte is '{' (tokenizer.bin starts with an int32 length); a folder
// is a Hugging Face model folder holding tokenizer.json. Throws InputError when unreadable.
TokenizerFileFormat detect_tokenizer_format(const std::string& path);

// vocab_size is the model's (tokenizer.bin stores no count); bos/eos as load_hf_tokenizer takes them.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path, int32_t vocab_size,
                                               std::optional<int32_t> bos_id = std::nullopt,
                                               std::optional<int32_t> eos_id = std::nullopt);

}  // namespace hipstudio
