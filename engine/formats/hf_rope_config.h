#pragma once
// The RoPE part of config.json -> ModelConfig::rope / rope_local. Reads every form transformers
// writes: top-level `rope_theta` + `rope_scaling` (key `type` or `rope_type`), `rope_parameters`
// (transformers 5), its per-layer-type form {"full_attention": {...}, "sliding_attention": {...}}
// and Gemma 3's older `rope_local_base_freq`. Refuses rope types and keys it does not implement.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/formats/architectures.h"

namespace hipstudio {

// Needs c.head_dim and c.max_seq_len already set.
void read_hf_rope(const nlohmann::json& config, const Architecture& arch, ModelConfig& c, const std::string& source);

// The rope_scaling object transformers 4 reads for `p` (null for plain "default").
nlohmann::json hf_rope_scaling_json(const RopeParams& p);

}  // namespace hipstudio
