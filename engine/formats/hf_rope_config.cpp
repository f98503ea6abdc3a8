#include "engine/formats/hf_rope_config.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/formats/config_json.h"

namespace hipstudio {

namespace {
using nlohmann::json;
using namespace config_json;

const char* const kSupportedRopeTypes = "default, linear, llama3, longrope";

std::vector<double> factor_list(const json& o, const char* key, int64_t expected, const std::string& source,
                                const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_array())
    throw InputError(source + ": '" + where + "." + key + "' must be a list of " + std::to_string(expected) +
                     " numbers (longrope needs short_factor and long_factor, head_dim/2 each)");
  if (static_cast<int64_t>(it->size()) != expected)
    throw InputError(source + ": '" + where + "." + key + "' has " + std::to_string(it->size()) +
                     " entries but head_dim/2 is " + std::to_string(expected) + "; config.json is inconsistent");
  std::vector<double> v;
  for (const json& x : *it) {
    if (!x.is_number() || !std::isfinite(x.get<double>()) || !(x.get<double>() > 0.0))
      throw InputError(source + ": '" + where + "." + key + "' must hold positive finite numbers, got " + x.dump());
    v.push_back(x.get<double>());
  }
  return v;
}

// One RoPE object (a rope_scaling, a rope_parameters or one of its per-layer-type entries).
// `where` names it in messages; `theta` is the base when the object has no rope_theta.
RopeParams read_rope_object(const json& o, double theta, const Architecture& arch, const json& config,
                            const ModelConfig& c, const std::string& source, const std::string& where) {
  if (!o.is_object()) throw InputError(source + ": '" + where + "' must be an object or null, got " + o.dump());
  RopeParams p;
  p.type = text(o, "rope_type", text(o, "type", "default", source, where + ".type"), source, where + ".rope_type");
  p.theta = number(o, "rope_theta", theta, source, where + ".rope_theta");
  std::set<std::string> allowed = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
  if (p.type == "default") {
  } else if (p.type == "linear") {
    allowed.insert("factor");
  } else if (p.type == "llama3") {
    allowed.insert({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else if (p.type == "longrope") {
    allowed.insert({"factor", "short_factor", "long_factor", "original_max_position_embeddings", "attention_factor"});
  } else {
    throw InputError(source + ": RoPE type '" + p.type + "' (" + where + ") is not supported (supported: " +
                     kSupportedRopeTypes + "); HiP Studio refuses rather than run it with the wrong positions");
  }
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!allowed.count(it.key()))
      throw InputError(source + ": key '" + where + "." + it.key() + "' is not supported for RoPE type '" + p.type +
                       "'; remove it if it is meant to change nothing, or use a supported RoPE (" +
                       kSupportedRopeTypes + ")");
  const double partial = number(o, "partial_rotary_factor", 1.0, source, where + ".partial_rotary_factor");
  if (partial != 1.0)
    throw InputError(source + ": '" + where + ".partial_rotary_factor' = " + std::to_string(partial) +
                     " is not supported (only 1: RoPE over the whole head)");
  if (p.type == "default") return p;
  if (p.type == "linear") {
    if (!has(o, "factor")) throw InputError(source + ": '" + where + "' (linear RoPE) needs a factor");
    p.factor = number(o, "factor", 1.0, source, where + ".factor");
    return p;
  }
  // llama3 and longrope: the pretraining context. Phi-3 keeps it at the top level, and there it
  // wins (transformers gives Phi-3's top-level value priority).
  const bool top_level_original = arch.defaults.original_max_position_embeddings > 0;
  p.original_max_position_embeddings =
      top_level_original && has(config, "original_max_position_embeddings")
          ? integer(config, "original_max_position_embeddings", 0, source)
          : integer(o, "original_max_position_embeddings", c.max_seq_len, source,
                    where + ".original_max_position_embeddings");
  if (p.type == "llama3") {
    for (const char* k : {"factor", "low_freq_factor", "high_freq_factor"})
      if (!has(o, k)) throw InputError(source + ": '" + where + "' (llama3 RoPE) needs " + k);
    p.factor = number(o, "factor", 1.0, source, where + ".factor");
    p.low_freq_factor = number(o, "low_freq_factor", 1.0, source, where + ".low_freq_factor");
    p.high_freq_factor = number(o, "high_freq_factor", 4.0, source, where + ".high_freq_factor");
    return p;
  }
  // longrope (Phi-3): factor defaults to the context extension, the attention factor to
  // sqrt(1 + ln(factor) / ln(original)) (transformers' _compute_longrope_parameters).
  const int64_t half = c.head_dim / 2;
  p.short_factor = factor_list(o, "short_factor", half, source, where);
  p.long_factor = factor_list(o, "long_factor", half, source, where);
  if (p.original_max_position_embeddings <= 0)
    throw InputError(source + ": longrope needs a positive original_max_position_embeddings");
  p.factor = number(o, "factor",
                    static_cast<double>(c.max_seq_len) / static_cast<double>(p.original_max_position_embeddings),
                    source, where + ".factor");
  const double derived =
      p.factor <= 1.0 ? 1.0
                      : std::sqrt(1.0 + std::log(p.factor) / std::log(static_cast<double>(p.original_max_position_embeddings)));
  p.attention_factor = number(o, "attention_factor", derived, source, where + ".attention_factor");
  return p;
}

bool is_layer_type_map(const json& o) {
  if (!o.is_object() || o.empty()) return false;
  for (auto it = o.begin(); it != o.end(); ++it)
    if (it.key() != "full_attention" && it.key() != "sliding_attention") return false;
  return true;
}
}  // namespace

void read_hf_rope(const json& j, const Architecture& arch, ModelConfig& c, const std::string& source) {
  const double top_theta = number(j, "rope_theta", arch.defaults.rope_theta, source);
  const json none;
  const json& scaling = has(j, "rope_scaling") ? j["rope_scaling"] : none;
  const json& parameters = has(j, "rope_parameters") ? j["rope_parameters"] : none;
  if (!scaling.is_null() && !parameters.is_null() && scaling != parameters)
    throw InputError(source + ": both 'rope_scaling' and 'rope_parameters' are set and they differ; keep one "
                     "(transformers 5 writes rope_parameters)");
  const bool from_parameters = !parameters.is_null();
  const json& rope = from_parameters ? parameters : scaling;
  const std::string name = from_parameters ? "rope_parameters" : "rope_scaling";
  const bool gemma3 = arch.window_form == WindowForm::kPattern;

  if (is_layer_type_map(rope)) {
    if (!gemma3)
      throw InputError(source + ": '" + name + "' gives RoPE per layer type, which " + arch.class_name +
                       " does not use; give one RoPE object");
    if (!rope.contains("full_attention") || !rope.contains("sliding_attention"))
      throw InputError(source + ": '" + name + "' must give both 'full_attention' and 'sliding_attention'");
    if (has(j, "rope_local_base_freq"))
      throw InputError(source + ": both 'rope_local_base_freq' and per-layer-type '" + name +
                       "' are set; keep " + name + " (transformers 5's form)");
    c.rope = read_rope_object(rope["full_attention"], top_theta, arch, j, c, source, name + ".full_attention");
    c.rope_local = read_rope_object(rope["sliding_attention"], arch.defaults.local_rope_theta, arch, j, c, source,
                                    name + ".sliding_attention");
    return;
  }
  c.rope = rope.is_null() ? RopeParams{} : read_rope_object(rope, top_theta, arch, j, c, source, name);
  if (rope.is_null()) c.rope.theta = top_theta;
  if (gemma3) {
    // Gemma 3's older form: the global RoPE above, the local one plain with its own base.
    c.rope_local = RopeParams{};
    c.rope_local.theta = number(j, "rope_local_base_freq", arch.defaults.local_rope_theta, source);
  } else {
    c.rope_local = c.rope;
  }
}

json hf_rope_scaling_json(const RopeParams& p) {
  if (p.type == "default") return nullptr;
  json s = {{"rope_type", p.type}};
  if (p.type == "linear") s["factor"] = p.factor;
  if (p.type == "llama3") {
    s["factor"] = p.factor;
    s["low_freq_factor"] = p.low_freq_factor;
    s["high_freq_factor"] = p.high_freq_factor;
    s["original_max_position_embeddings"] = p.original_max_position_embeddings;
  }
  if (p.type == "longrope") {
    s["short_factor"] = p.short_factor;
    s["long_factor"] = p.long_factor;
    s["original_max_position_embeddings"] = p.original_max_position_embeddings;
    s["factor"] = p.factor;
    s["attention_factor"] = p.attention_factor;
  }
  return s;
}

}  // namespace hipstudio
