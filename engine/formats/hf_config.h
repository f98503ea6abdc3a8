#pragma once
// Hugging Face `config.json` -> ModelConfig, for the architectures of engine/formats/architectures.h.
// Both the transformers 4 forms (top-level rope_theta / rope_scaling, Gemma 3's
// rope_local_base_freq + sliding_window_pattern, Qwen2's use_sliding_window + max_window_layers) and
// the transformers 5 forms (rope_parameters, per layer type; layer_types) are read. A key that
// would change the maths and is not implemented, or a key the table does not know, is refused with
// InputError naming it: nothing in config.json is silently ignored.
#include <string>

#include "engine/formats/model_config.h"

namespace hipstudio {

// Parses and validates; throws InputError naming the missing/invalid key and the file.
ModelConfig parse_hf_config_text(const std::string& json_text, const std::string& source);
ModelConfig read_hf_config(const std::string& config_json_path);

// The config.json text `hipstudio convert` writes for a model (LlamaForCausalLM for a llama2.c
// model, else the model's own architecture), in the transformers 4 forms that transformers 5 also
// reads; parse_hf_config_text gives the same ModelConfig back.
std::string hf_config_json(const ModelConfig& config, const std::string& torch_dtype);

}  // namespace hipstudio
