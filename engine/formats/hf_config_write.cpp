// ModelConfig -> config.json, the inverse of hf_config.cpp for every entry of the architecture table.
#include <cmath>

#include <nlohmann/json.hpp>

#include "engine/formats/architectures.h"
#include "engine/formats/errors.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/hf_rope_config.h"

namespace hipstudio {

namespace {
using nlohmann::json;

// query_pre_attn_scalar from the scale it set (1/sqrt(s)); integers come back exactly.
double pre_attn_scalar(double scale) {
  const double s = 1.0 / (scale * scale);
  return std::fabs(s - std::round(s)) < 1e-6 * s ? std::round(s) : s;
}

// The one window every windowed layer uses (0 when none): every form config.json has carries one.
int64_t common_window(const ModelConfig& c) {
  int64_t w = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int64_t lw = c.window(l);
    if (lw > 0 && w > 0 && lw != w)
      throw InputError("convert: layers use different sliding windows, which no config.json form can say");
    if (lw > 0) w = lw;
  }
  return w;
}

json layer_types(const ModelConfig& c) {
  json t = json::array();
  for (int64_t l = 0; l < c.n_layers; ++l) t.push_back(c.window(l) > 0 ? "sliding_attention" : "full_attention");
  return t;
}
}  // namespace

std::string hf_config_json(const ModelConfig& c, const std::string& torch_dtype) {
  const std::string cls = c.architecture == "llama2.c" ? "LlamaForCausalLM" : c.architecture;
  const Architecture* a = find_architecture(cls);
  if (!a) throw InputError("convert: architecture '" + cls + "' is not supported (supported: " + supported_architectures_text() + ")");
  json j;
  j["architectures"] = {cls};
  j["model_type"] = a->model_type;
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hidden_dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope.theta;
  j["rope_scaling"] = hf_rope_scaling_json(c.rope);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j[a->activation_key] = c.activation == Activation::kGeluTanh ? "gelu_pytorch_tanh" : "silu";
  j["torch_dtype"] = torch_dtype;
  if (c.bos_id >= 0) j["bos_token_id"] = c.bos_id;
  if (c.eos_id >= 0) j["eos_token_id"] = c.eos_id;
  if (a->attention_bias_key) j["attention_bias"] = a->attention_bias_covers_o ? c.attention_out_bias : c.attention_bias;
  if (a->mlp_bias_key) j["mlp_bias"] = c.mlp_bias;

  const int64_t window = common_window(c);
  switch (a->window_form) {
    case WindowForm::kNone:
      if (window > 0) throw InputError("convert: " + cls + " has no sliding window, but the model uses one");
      break;
    case WindowForm::kAllLayers:
      if (window > 0 && c.full_attention_layers() > 0)
        throw InputError("convert: " + cls + " windows every layer or none, but this model mixes them");
      j["sliding_window"] = window > 0 ? json(window) : json(nullptr);
      break;
    case WindowForm::kFromMaxWindowLayers: {
      // The windowed layers are a suffix for transformers 4 (max_window_layers); layer_types says
      // the same to transformers 5 and to the parser.
      int64_t first = c.n_layers;
      for (int64_t l = c.n_layers - 1; l >= 0 && c.window(l) > 0; --l) first = l;
      j["use_sliding_window"] = window > 0;
      j["sliding_window"] = window > 0 ? json(window) : json(nullptr);
      j["max_window_layers"] = first;
      j["layer_types"] = layer_types(c);
      break;
    }
    case WindowForm::kAlternating:
    case WindowForm::kPattern:
      j["sliding_window"] = window > 0 ? json(window) : json(nullptr);
      j["layer_types"] = layer_types(c);
      break;
  }
  if (a->defaults.query_pre_attn_scalar > 0) {
    j["query_pre_attn_scalar"] = pre_attn_scalar(c.attention_scale > 0 ? c.attention_scale : 1.0 / std::sqrt(double(c.head_dim)));
    j["attn_logit_softcapping"] = c.attn_softcap > 0 ? json(c.attn_softcap) : json(nullptr);
    j["final_logit_softcapping"] = c.final_softcap > 0 ? json(c.final_softcap) : json(nullptr);
  }
  if (a->window_form == WindowForm::kPattern) {
    if (c.rope_local.type != "default") {
      // Only transformers 5's per-layer-type form carries a scaled local RoPE.
      j.erase("rope_theta");
      j.erase("rope_scaling");
      json full = hf_rope_scaling_json(c.rope), local = hf_rope_scaling_json(c.rope_local);
      if (full.is_null()) full = {{"rope_type", "default"}};
      full["rope_theta"] = c.rope.theta;
      local["rope_theta"] = c.rope_local.theta;
      j["rope_parameters"] = {{"full_attention", full}, {"sliding_attention", local}};
    } else {
      j["rope_local_base_freq"] = c.rope_local.theta;
    }
  }
  if (a->defaults.original_max_position_embeddings > 0 && c.rope.type == "longrope")
    j["original_max_position_embeddings"] = c.rope.original_max_position_embeddings;
  return j.dump(2) + "\n";
}

}  // namespace hipstudio
