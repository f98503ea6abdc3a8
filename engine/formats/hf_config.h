#pragma once
// Hugging Face `config.json` for Llama-family decoders -> ModelConfig.
#include <string>

#include "engine/formats/model_config.h"

namespace hipstudio {

// Architectures the engine runs; anything else is refused with this list in the message.
inline constexpr const char* kSupportedArchitectures = "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM";

// Parses and validates; throws InputError naming the missing/invalid key and the file.
ModelConfig parse_hf_config_text(const std::string& json_text, const std::string& source);
ModelConfig read_hf_config(const std::string& config_json_path);

// The config.json text `hipstudio convert` writes for a model (LlamaForCausalLM, or the model's own
// architecture when it came from a Hugging Face directory).
std::string hf_config_json(const ModelConfig& config, const std::string& torch_dtype);

}  // namespace hipstudio
