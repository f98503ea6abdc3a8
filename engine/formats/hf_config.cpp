#include "engine/formats/hf_config.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/formats/errors.h"

namespace hipstudio {

namespace {
using nlohmann::json;

int64_t required_int(const json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    throw InputError(source + ": missing key '" + key + "' (a Llama-family config.json needs it)");
  if (!it->is_number_integer())
    throw InputError(source + ": key '" + key + "' must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

int64_t optional_int(const json& j, const char* key, int64_t fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer())
    throw InputError(source + ": key '" + key + "' must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

double optional_number(const json& j, const char* key, double fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw InputError(source + ": key '" + key + "' must be a number, got " + it->dump());
  return it->get<double>();
}

bool optional_bool(const json& j, const char* key, bool fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw InputError(source + ": key '" + key + "' must be true or false");
  return it->get<bool>();
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
}  // namespace

ModelConfig parse_hf_config_text(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw InputError(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw InputError(source + ": config.json must be a JSON object");

  ModelConfig c;
  auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->empty() || !(*arch)[0].is_string())
    throw InputError(source + ": missing key 'architectures' (expected one of " +
                     std::string(kSupportedArchitectures) + ")");
  c.architecture = (*arch)[0].get<std::string>();
  if (c.architecture != "LlamaForCausalLM" && c.architecture != "MistralForCausalLM" &&
      c.architecture != "Qwen2ForCausalLM")
    throw InputError(source + ": architecture '" + c.architecture + "' is not supported (supported: " +
                     kSupportedArchitectures + ")");

  c.dim = required_int(j, "hidden_size", source);
  c.hidden_dim = required_int(j, "intermediate_size", source);
  c.n_layers = required_int(j, "num_hidden_layers", source);
  c.n_heads = required_int(j, "num_attention_heads", source);
  c.n_kv_heads = optional_int(j, "num_key_value_heads", c.n_heads, source);
  c.vocab_size = required_int(j, "vocab_size", source);
  c.max_seq_len = required_int(j, "max_position_embeddings", source);
  if (c.n_heads <= 0) throw InputError(source + ": num_attention_heads must be positive");
  c.head_dim = optional_int(j, "head_dim", c.dim / c.n_heads, source);
  c.rms_norm_eps = optional_number(j, "rms_norm_eps", 1e-6, source);
  c.rope_theta = optional_number(j, "rope_theta", 10000.0, source);
  c.tie_word_embeddings = optional_bool(j, "tie_word_embeddings", false, source);
  c.attention_bias = c.architecture == "Qwen2ForCausalLM" || optional_bool(j, "attention_bias", false, source);
  c.bos_id = token_id(j, "bos_token_id", source);
  c.eos_id = token_id(j, "eos_token_id", source);

  auto scaling = j.find("rope_scaling");
  if (scaling != j.end() && !scaling->is_null()) {
    if (!scaling->is_object()) throw InputError(source + ": rope_scaling must be an object or null");
    std::string type;
    if (scaling->contains("rope_type") && (*scaling)["rope_type"].is_string())
      type = (*scaling)["rope_type"].get<std::string>();
    else if (scaling->contains("type") && (*scaling)["type"].is_string())
      type = (*scaling)["type"].get<std::string>();
    if (type != "default") c.rope_scaling.type = type;
    c.rope_scaling.factor = optional_number(*scaling, "factor", 1.0, source);
    c.rope_scaling.low_freq_factor = optional_number(*scaling, "low_freq_factor", 1.0, source);
    c.rope_scaling.high_freq_factor = optional_number(*scaling, "high_freq_factor", 4.0, source);
    c.rope_scaling.original_max_position_embeddings =
        optional_int(*scaling, "original_max_position_embeddings", 8192, source);
  }
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

std::string hf_config_json(const ModelConfig& c, const std::string& torch_dtype) {
  const bool from_llama2c = c.architecture == "llama2.c";
  json j;
  j["architectures"] = {from_llama2c ? "LlamaForCausalLM" : c.architecture};
  j["model_type"] = c.architecture == "Qwen2ForCausalLM"     ? "qwen2"
                    : c.architecture == "MistralForCausalLM" ? "mistral"
                                                             : "llama";
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hidden_dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["attention_bias"] = c.attention_bias;
  j["hidden_act"] = "silu";
  j["torch_dtype"] = torch_dtype;
  if (c.bos_id >= 0) j["bos_token_id"] = c.bos_id;
  if (c.eos_id >= 0) j["eos_token_id"] = c.eos_id;
  if (c.rope_scaling.type.empty()) {
    j["rope_scaling"] = nullptr;
  } else {
    j["rope_scaling"] = {{"rope_type", c.rope_scaling.type},
                         {"factor", c.rope_scaling.factor},
                         {"low_freq_factor", c.rope_scaling.low_freq_factor},
                         {"high_freq_factor", c.rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  }
  return j.dump(2) + "\n";
}

}  // namespace hipstudio
