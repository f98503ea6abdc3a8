#include "engine/formats/hf_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "engine/formats/architectures.h"
#include "engine/formats/config_json.h"
#include "engine/formats/hf_rope_config.h"

namespace hipstudio {

namespace {
using nlohmann::json;
using namespace config_json;

bool listed(const std::vector<const char*>& keys, const std::string& key) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; });
}

// Every key of config.json must be one the table knows: read by the parser (it changes the maths),
// harmless, or neutral at the value it has. Anything else is refused, so nothing is silently ignored.
void check_keys(const json& j, const Architecture& a, const std::string& source) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (listed(kCommonMathsKeys, key) || listed(a.maths_keys, key) || listed(kCommonHarmlessKeys, key) ||
        listed(a.harmless_keys, key))
      continue;
    auto neutral = std::find_if(a.neutral_keys.begin(), a.neutral_keys.end(),
                                [&](const NeutralKey& n) { return key == n.name; });
    if (neutral != a.neutral_keys.end()) {
      if (it->is_null() || std::find(neutral->values.begin(), neutral->values.end(), it->dump()) != neutral->values.end())
        continue;
      std::string values;
      for (const std::string& v : neutral->values) values += (values.empty() ? "" : " or ") + v;
      throw InputError(source + ": key '" + key + "' = " + it->dump() + " is not supported for " + a.class_name +
                       " (HiP Studio implements only " + values + ", and another value changes the results)");
    }
    throw InputError(source + ": key '" + key + "' is not supported for " + a.class_name +
                     ": HiP Studio does not implement it and refuses rather than ignore a setting that may change "
                     "the model's results; remove it from config.json if it changes nothing");
  }
}

// bos/eos ids may be an integer, a list (first entry is used) or absent (-1).
int32_t token_id(const json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return -1;
  const json& v = it->is_array() && !it->empty() ? (*it)[0] : *it;
  // -1 also means none; any other negative id or one past int32 would be silently mangled.
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT32_MAX) ||
      (!v.is_number_unsigned() && (v.get<int64_t>() < -1 || v.get<int64_t>() > INT32_MAX)))
    throw InputError(source + ": key '" + key + "' must be a token id (0 to 2^31-1, or -1 / null for none), got " +
                     v.dump() + "; fix config.json or take the one that came with the model");
  return static_cast<int32_t>(v.get<int64_t>());
}

Activation read_activation(const json& j, const Architecture& a, const std::string& source) {
  const bool gemma = a.default_activation == Activation::kGeluTanh;
  const std::string fallback = gemma ? "gelu_pytorch_tanh" : "silu";
  const std::string name = text(j, a.activation_key, fallback, source);
  const bool ok = gemma ? name == "gelu_pytorch_tanh" : (name == "silu" || name == "swish");
  if (!ok)
    throw InputError(source + ": " + a.activation_key + " '" + name + "' is not supported for " + a.class_name +
                     " (supported: " + fallback + ")");
  // Gemma reads hidden_activation; an older hidden_act beside it must agree, or which one the
  // checkpoint meant is unclear.
  if (gemma && has(j, "hidden_act") && text(j, "hidden_act", "", source) != name)
    throw InputError(source + ": hidden_act '" + text(j, "hidden_act", "", source) + "' disagrees with " +
                     "hidden_activation '" + name + "' (transformers uses hidden_activation); make them equal");
  return gemma ? Activation::kGeluTanh : Activation::kSilu;
}

// Which layers attend through a window, in the form of config.json's architecture.
void read_windows(const json& j, const Architecture& a, ModelConfig& c, const std::string& source) {
  const size_t n = static_cast<size_t>(c.n_layers);
  c.layer_window.assign(n, 0);
  if (a.window_form == WindowForm::kNone) return;
  auto positive_window = [&](const char* key, int64_t fallback) {
    const int64_t w = integer(j, key, fallback, source);
    if (has(j, key) && w <= 0) throw InputError(source + ": '" + key + "' must be positive or null, got " + std::to_string(w));
    return j.contains(key) && j[key].is_null() ? 0 : w;
  };
  int64_t window = positive_window("sliding_window", a.defaults.sliding_window);
  if (a.window_form == WindowForm::kAllLayers) {
    c.layer_window.assign(n, window);
    return;
  }
  if (a.window_form == WindowForm::kFromMaxWindowLayers && !boolean(j, "use_sliding_window", false, source)) window = 0;
  if (a.window_form == WindowForm::kAlternating && has(j, "sliding_window_size") &&
      integer(j, "sliding_window_size", 0, source) != window)
    throw InputError(source + ": 'sliding_window_size' disagrees with 'sliding_window'; make them equal");

  std::vector<bool> sliding(n, false);
  if (has(j, "layer_types")) {
    const json& types = j["layer_types"];
    if (!types.is_array() || types.size() != n)
      throw InputError(source + ": 'layer_types' must be a list of num_hidden_layers (" + std::to_string(n) +
                       ") entries, got " + types.dump());
    for (size_t l = 0; l < n; ++l) {
      const std::string t = types[l].is_string() ? types[l].get<std::string>() : types[l].dump();
      if (t != "full_attention" && t != "sliding_attention")
        throw InputError(source + ": layer_types[" + std::to_string(l) + "] = '" + t +
                         "' is not supported (supported: full_attention, sliding_attention)");
      sliding[l] = t == "sliding_attention";
    }
  } else if (a.window_form == WindowForm::kFromMaxWindowLayers) {
    const int64_t first = integer(j, "max_window_layers", a.defaults.max_window_layers, source);
    for (size_t l = 0; l < n; ++l) sliding[l] = window > 0 && static_cast<int64_t>(l) >= first;
  } else {
    // Gemma 2: every other layer, starting with the first; Gemma 3: all but every pattern-th.
    int64_t pattern = a.defaults.sliding_window_pattern;
    if (a.window_form == WindowForm::kPattern)
      pattern = integer(j, "sliding_window_pattern", integer(j, "_sliding_window_pattern", pattern, source), source);
    if (pattern <= 0) throw InputError(source + ": 'sliding_window_pattern' must be positive");
    for (size_t l = 0; l < n; ++l) sliding[l] = (static_cast<int64_t>(l) + 1) % pattern != 0;
  }
  for (size_t l = 0; l < n; ++l) {
    if (!sliding[l]) continue;
    if (window <= 0)
      throw InputError(source + ": layer " + std::to_string(l) + " is a sliding-window layer but no window is set (" +
                       (a.window_form == WindowForm::kFromMaxWindowLayers ? "use_sliding_window is false or sliding_window is null"
                                                                          : "sliding_window is null") +
                       "); fix layer_types or sliding_window");
    c.layer_window[l] = window;
  }
}

double optional_cap(const json& j, const char* key, double fallback, const std::string& source) {
  if (j.contains(key) && j[key].is_null()) return 0.0;
  const double cap = number(j, key, fallback, source);
  if (cap < 0.0) throw InputError(source + ": '" + std::string(key) + "' must be positive or null");
  return cap;
}
}  // namespace

ModelConfig parse_hf_config_text(const std::string& text_in, const std::string& source) {
  json j;
  try {
    j = json::parse(text_in);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw InputError(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw InputError(source + ": config.json must be a JSON object");

  auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->empty() || !(*arch)[0].is_string())
    throw InputError(source + ": missing key 'architectures' (expected one of " + supported_architectures_text() + ")");
  if (arch->size() > 1)
    throw InputError(source + ": 'architectures' lists " + std::to_string(arch->size()) +
                     " classes; a model directory for HiP Studio names one");
  ModelConfig c;
  c.architecture = (*arch)[0].get<std::string>();
  const Architecture* a = find_architecture(c.architecture);
  if (!a)
    throw InputError(source + ": architecture '" + c.architecture + "' is not supported (supported: " +
                     supported_architectures_text() + ")");
  const std::string model_type = text(j, "model_type", a->model_type, source);
  if (model_type != a->model_type)
    throw InputError(source + ": model_type '" + model_type + "' does not match architecture " + c.architecture +
                     " (expected '" + a->model_type + "')" +
                     (model_type == "gemma3" ? "; a multimodal Gemma 3 config keeps the text model in text_config, "
                                               "which HiP Studio does not read: give the text model's own config"
                                             : ""));
  check_keys(j, *a, source);

  c.dim = required_integer(j, "hidden_size", source);
  c.hidden_dim = required_integer(j, "intermediate_size", source);
  c.n_layers = required_integer(j, "num_hidden_layers", source);
  c.n_heads = required_integer(j, "num_attention_heads", source);
  c.n_kv_heads = integer(j, "num_key_value_heads", c.n_heads, source);
  c.vocab_size = required_integer(j, "vocab_size", source);
  c.max_seq_len = required_integer(j, "max_position_embeddings", source);
  if (c.n_heads <= 0) throw InputError(source + ": num_attention_heads must be positive");
  if (c.n_layers <= 0 || c.n_layers > 4096) throw InputError(source + ": num_hidden_layers must be in 1..4096");
  c.head_dim = integer(j, "head_dim", a->defaults.head_dim > 0 ? a->defaults.head_dim : c.dim / c.n_heads, source);
  c.rms_norm_eps = number(j, "rms_norm_eps", a->defaults.rms_norm_eps, source);
  c.tie_word_embeddings = boolean(j, "tie_word_embeddings", a->defaults.tie_word_embeddings, source);
  c.bos_id = token_id(j, "bos_token_id", source);
  c.eos_id = token_id(j, "eos_token_id", source);
  c.activation = read_activation(j, *a, source);

  const bool attention_bias = a->attention_bias_key && boolean(j, "attention_bias", false, source);
  c.attention_bias = a->qkv_bias_always || attention_bias;
  c.attention_out_bias = a->attention_bias_covers_o && attention_bias;
  c.mlp_bias = a->mlp_bias_key && boolean(j, "mlp_bias", false, source);
  c.qk_norm = a->qk_norm;
  c.sandwich_norms = a->sandwich_norms;
  if (a->scale_embeddings) c.embedding_scale = std::sqrt(static_cast<double>(c.dim));
  if (a->defaults.query_pre_attn_scalar > 0) {
    const double s = number(j, "query_pre_attn_scalar", a->defaults.query_pre_attn_scalar, source);
    if (!(s > 0)) throw InputError(source + ": 'query_pre_attn_scalar' must be positive");
    c.attention_scale = 1.0 / std::sqrt(s);
    c.attn_softcap = optional_cap(j, "attn_logit_softcapping", a->defaults.attn_softcap, source);
    c.final_softcap = optional_cap(j, "final_logit_softcapping", a->defaults.final_softcap, source);
  }
  if (a->window_form == WindowForm::kAllLayers && a->defaults.original_max_position_embeddings > 0) {
    // Phi-3: a top-level partial_rotary_factor moves into the RoPE object in transformers 5.
    const double partial = number(j, "partial_rotary_factor", 1.0, source);
    if (partial != 1.0)
      throw InputError(source + ": 'partial_rotary_factor' = " + std::to_string(partial) +
                       " is not supported (only 1: RoPE over the whole head)");
    integer(j, "original_max_position_embeddings", 0, source);  // type-checked; used by longrope only
  }
  read_hf_rope(j, *a, c, source);
  read_windows(j, *a, c, source);
  validate_model_config(c, source);
  return c;
}

ModelConfig read_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open config.json (a Hugging Face model directory needs one)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hf_config_text(text.str(), path);
}

}  // namespace hipstudio
