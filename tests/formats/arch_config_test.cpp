// Every architecture fixture's config.json (saved by transformers 5.17, tests/fixtures/archs) parsed
// through the architecture table: windows per layer, RoPE per layer type, scales and switches; the
// older transformers 4 forms of the same settings; and each maths key set to a value HiP Studio
// does not implement, refused with InputError naming the key.
#include <cmath>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/formats/architectures.h"
#include "engine/formats/errors.h"
#include "engine/formats/hf_config.h"

namespace hipstudio {
namespace {

using nlohmann::json;

std::string fixture_dir(const std::string& variant) {
  return std::string(HIPSTUDIO_SOURCE_DIR) + "/tests/fixtures/archs/" + variant;
}

json fixture_config(const std::string& variant) {
  std::ifstream in(fixture_dir(variant) + "/config.json");
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

ModelConfig parse(const json& j) { return parse_hf_config_text(j.dump(), "config.json"); }

// The InputError message of parsing j ("" when it parses).
std::string refusal(const json& j) {
  try {
    parse(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::vector<std::string> kVariants = {
    "llama_tied", "llama2", "llama3", "llama32_tied", "llama_bias", "mistral", "mistral_window", "qwen2",
    "qwen2_tied", "qwen2_window", "qwen3", "qwen3_tied", "gemma2", "gemma3", "gemma3_linear", "phi3",
    "phi3_window", "phi3_longrope"};

std::vector<int64_t> windows(std::initializer_list<int64_t> w) { return w; }

TEST(ArchConfig, EveryFixtureParsesAndRoundTrips) {
  for (const std::string& v : kVariants) {
    SCOPED_TRACE(v);
    const ModelConfig c = parse(fixture_config(v));
    EXPECT_EQ(c.architecture, fixture_config(v)["architectures"][0].get<std::string>());
    EXPECT_EQ(static_cast<int64_t>(c.layer_window.size()), c.n_layers);
    // What the converter writes reads back as the same model.
    const ModelConfig back = parse_hf_config_text(hf_config_json(c, "float32"), "written");
    EXPECT_EQ(back.rope, c.rope);
    EXPECT_EQ(back.rope_local, c.rope_local);
    EXPECT_EQ(back.layer_window, c.layer_window);
    EXPECT_EQ(back.attention_scale, c.attention_scale);
    EXPECT_EQ(back.attn_softcap, c.attn_softcap);
    EXPECT_EQ(back.final_softcap, c.final_softcap);
    EXPECT_EQ(back.embedding_scale, c.embedding_scale);
    EXPECT_EQ(back.attention_bias, c.attention_bias);
    EXPECT_EQ(back.attention_out_bias, c.attention_out_bias);
    EXPECT_EQ(back.mlp_bias, c.mlp_bias);
    EXPECT_EQ(back.tie_word_embeddings, c.tie_word_embeddings);
    EXPECT_EQ(back.head_dim, c.head_dim);
    EXPECT_EQ(back.activation, c.activation);
  }
}

TEST(ArchConfig, LlamaRopeForms) {
  const ModelConfig l2 = parse(fixture_config("llama2"));
  EXPECT_EQ(l2.rope.type, "default");
  EXPECT_EQ(l2.rope.theta, 10000.0);
  EXPECT_EQ(l2.layer_window, windows({0, 0, 0}));
  EXPECT_EQ(l2.full_attention_layers(), 3);
  EXPECT_FALSE(l2.attention_bias || l2.attention_out_bias || l2.mlp_bias || l2.qk_norm || l2.sandwich_norms);
  const ModelConfig l3 = parse(fixture_config("llama3"));
  EXPECT_EQ(l3.rope.type, "llama3");
  EXPECT_EQ(l3.rope.theta, 500000.0);
  EXPECT_EQ(l3.rope.factor, 8.0);
  EXPECT_EQ(l3.rope.original_max_position_embeddings, 64);
  EXPECT_EQ(l3.rope_local, l3.rope);
  EXPECT_EQ(parse(fixture_config("llama32_tied")).rope.factor, 32.0);
  EXPECT_TRUE(parse(fixture_config("llama32_tied")).tie_word_embeddings);
  // transformers 4's form of the same model: top-level rope_theta and rope_scaling with "type".
  json old = fixture_config("llama3");
  old.erase("rope_parameters");
  old["rope_theta"] = 500000.0;
  old["rope_scaling"] = {{"type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 64}};
  EXPECT_EQ(parse(old).rope, l3.rope);
  const ModelConfig bias = parse(fixture_config("llama_bias"));
  EXPECT_TRUE(bias.attention_bias && bias.attention_out_bias && bias.mlp_bias);  // Llama's attention_bias covers o_proj
}

TEST(ArchConfig, Windows) {
  EXPECT_EQ(parse(fixture_config("mistral")).layer_window, windows({0, 0, 0}));
  EXPECT_EQ(parse(fixture_config("mistral_window")).layer_window, windows({24, 24, 24}));
  EXPECT_EQ(parse(fixture_config("mistral_window")).full_attention_layers(), 0);
  EXPECT_EQ(parse(fixture_config("qwen2")).layer_window, windows({0, 0, 0}));
  EXPECT_EQ(parse(fixture_config("qwen2_window")).layer_window, windows({0, 0, 24, 24}));
  EXPECT_EQ(parse(fixture_config("phi3_window")).layer_window, windows({24, 24}));
  EXPECT_EQ(parse(fixture_config("gemma2")).layer_window, windows({24, 0, 24, 0}));
  EXPECT_EQ(parse(fixture_config("gemma3")).layer_window, windows({24, 24, 24, 24, 24, 0}));
  EXPECT_EQ(parse(fixture_config("gemma3")).full_attention_layers(), 1);
  // Older forms: Qwen2 without layer_types (use_sliding_window + max_window_layers, as
  // transformers' Qwen2Config derives them), Gemma 2 alternating, Gemma 3's pattern.
  json q = fixture_config("qwen2_window");
  q.erase("layer_types");
  EXPECT_EQ(parse(q).layer_window, windows({0, 0, 24, 24}));
  q["use_sliding_window"] = false;
  EXPECT_EQ(parse(q).layer_window, windows({0, 0, 0, 0}));
  json g2 = fixture_config("gemma2");
  g2.erase("layer_types");
  EXPECT_EQ(parse(g2).layer_window, windows({24, 0, 24, 0}));
  json g3 = fixture_config("gemma3");
  g3.erase("layer_types");
  g3.erase("_sliding_window_pattern");
  g3["sliding_window_pattern"] = 3;
  EXPECT_EQ(parse(g3).layer_window, windows({24, 24, 0, 24, 24, 0}));
}

TEST(ArchConfig, GemmaScalesCapsAndLocalRope) {
  const ModelConfig g2 = parse(fixture_config("gemma2"));
  EXPECT_EQ(g2.activation, Activation::kGeluTanh);
  EXPECT_TRUE(g2.sandwich_norms);
  EXPECT_FALSE(g2.qk_norm);
  EXPECT_DOUBLE_EQ(g2.embedding_scale, 8.0);  // sqrt(64)
  EXPECT_DOUBLE_EQ(g2.attention_scale, 1.0 / std::sqrt(24.0));
  EXPECT_EQ(g2.attn_softcap, 5.0);
  EXPECT_EQ(g2.final_softcap, 3.0);
  EXPECT_TRUE(g2.tie_word_embeddings);
  const ModelConfig g3 = parse(fixture_config("gemma3"));
  EXPECT_TRUE(g3.qk_norm && g3.sandwich_norms);
  EXPECT_EQ(g3.attn_softcap, 0.0);
  EXPECT_EQ(g3.final_softcap, 0.0);
  EXPECT_DOUBLE_EQ(g3.attention_scale, 0.25);
  EXPECT_EQ(g3.rope.theta, 1e6);
  EXPECT_EQ(g3.rope_local.theta, 1e4);
  EXPECT_EQ(g3.rope_local.type, "default");
  const ModelConfig lin = parse(fixture_config("gemma3_linear"));
  EXPECT_EQ(lin.rope.type, "linear");
  EXPECT_EQ(lin.rope.factor, 8.0);
  EXPECT_EQ(lin.rope_local.type, "default");
  // transformers 4's Gemma 3 form: rope_theta + rope_scaling (global) and rope_local_base_freq.
  json old = fixture_config("gemma3_linear");
  old.erase("rope_parameters");
  old["rope_theta"] = 1e6;
  old["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  old["rope_local_base_freq"] = 10000.0;
  const ModelConfig o = parse(old);
  EXPECT_EQ(o.rope, lin.rope);
  EXPECT_EQ(o.rope_local, lin.rope_local);
}

TEST(ArchConfig, Qwen3AndPhi3) {
  const ModelConfig q3 = parse(fixture_config("qwen3"));
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_EQ(q3.head_dim, 32);  // decoupled from hidden / heads = 16
  EXPECT_FALSE(q3.attention_bias);
  EXPECT_TRUE(parse(fixture_config("qwen2")).attention_bias);  // Qwen2: q/k/v biases always
  EXPECT_FALSE(parse(fixture_config("qwen2")).attention_out_bias);
  const ModelConfig p = parse(fixture_config("phi3_longrope"));
  EXPECT_EQ(p.rope.type, "longrope");
  EXPECT_EQ(p.rope.original_max_position_embeddings, 64);
  EXPECT_DOUBLE_EQ(p.rope.factor, 8.0);  // 512 / 64
  EXPECT_DOUBLE_EQ(p.rope.attention_factor, std::sqrt(1.0 + std::log(8.0) / std::log(64.0)));
  EXPECT_EQ(p.rope.long_factor.size(), 8u);
  EXPECT_EQ(p.rope.short_factor[1], 1.05);
  EXPECT_EQ(parse(fixture_config("phi3")).rope.type, "default");
  // transformers 4's Phi-3.5 form: rope_scaling with "type", original at the top level.
  json old = fixture_config("phi3_longrope");
  json scaling = old["rope_parameters"];
  old.erase("rope_parameters");
  scaling.erase("original_max_position_embeddings");
  scaling.erase("partial_rotary_factor");
  scaling.erase("rope_theta");
  scaling.erase("rope_type");
  scaling["type"] = "longrope";
  old["rope_scaling"] = scaling;
  old["rope_theta"] = 10000.0;
  EXPECT_EQ(parse(old).rope, p.rope);
}

// One refusal: `variant`'s config with `edit` applied must fail naming `key`.
void expect_refused(const std::string& variant, const std::function<void(json&)>& edit, const std::string& key) {
  json j = fixture_config(variant);
  edit(j);
  const std::string message = refusal(j);
  EXPECT_NE(message.find(key), std::string::npos) << variant << ": expected a refusal naming '" << key << "', got '"
                                                   << message << "'";
}

TEST(ArchConfig, UnsupportedMathsKeysAreRefusedByName) {
  expect_refused("llama2", [](json& j) { j["rope_parameters"]["rope_type"] = "yarn"; j["rope_parameters"]["factor"] = 4.0; }, "yarn");
  expect_refused("llama2", [](json& j) { j["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 2.0}}; }, "dynamic");
  expect_refused("llama2", [](json& j) { j.erase("rope_parameters"); j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}}; }, "dynamic");
  expect_refused("llama2", [](json& j) { j["rope_parameters"]["partial_rotary_factor"] = 0.5; }, "partial_rotary_factor");
  expect_refused("phi3", [](json& j) { j["rope_parameters"]["partial_rotary_factor"] = 0.5; }, "partial_rotary_factor");
  expect_refused("llama3", [](json& j) { j["rope_parameters"]["beta_fast"] = 32; }, "beta_fast");
  expect_refused("llama2", [](json& j) { j["hidden_act"] = "gelu"; }, "hidden_act");
  expect_refused("gemma2", [](json& j) { j["hidden_activation"] = "gelu"; }, "hidden_activation");
  expect_refused("gemma2", [](json& j) { j["hidden_act"] = "silu"; }, "hidden_act");
  expect_refused("llama2", [](json& j) { j["pretraining_tp"] = 2; }, "pretraining_tp");
  expect_refused("llama2", [](json& j) { j["attention_dropout"] = 0.1; }, "attention_dropout");
  expect_refused("phi3", [](json& j) { j["resid_pdrop"] = 0.1; }, "resid_pdrop");
  expect_refused("mistral", [](json& j) { j["attention_bias"] = true; }, "attention_bias");
  expect_refused("llama2", [](json& j) { j["sliding_window"] = 24; }, "sliding_window");  // Llama has no window
  expect_refused("mistral_window", [](json& j) { j["use_sliding_window"] = true; }, "use_sliding_window");
  expect_refused("mistral", [](json& j) { j["layer_types"] = {"full_attention", "full_attention", "full_attention"}; }, "layer_types");
  expect_refused("qwen2", [](json& j) { j["layer_types"][1] = "chunked_attention"; }, "chunked_attention");
  expect_refused("qwen2", [](json& j) { j["layer_types"][1] = "sliding_attention"; }, "layer 1");  // no window set
  expect_refused("gemma2", [](json& j) { j["layer_types"].erase(0); }, "layer_types");
  expect_refused("gemma3", [](json& j) { j["use_bidirectional_attention"] = true; }, "use_bidirectional_attention");
  expect_refused("gemma2", [](json& j) { j["attn_logit_softcapping"] = -1.0; }, "attn_logit_softcapping");
  expect_refused("gemma2", [](json& j) { j["query_pre_attn_scalar"] = 0; }, "query_pre_attn_scalar");
  expect_refused("mistral_window", [](json& j) { j["sliding_window"] = 0; }, "sliding_window");
  expect_refused("phi3_longrope", [](json& j) { j["rope_parameters"]["long_factor"].erase(0); }, "long_factor");
  expect_refused("llama2", [](json& j) { j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}}}; }, "rope_parameters");
  expect_refused("llama2", [](json& j) { j["some_new_switch"] = true; }, "some_new_switch");
  expect_refused("llama2", [](json& j) { j["quantization_config"] = {{"quant_method", "gptq"}}; }, "quantization_config");
  expect_refused("qwen3", [](json& j) { j["architectures"] = {"Qwen3MoeForCausalLM"}; }, "Qwen3MoeForCausalLM");
  expect_refused("qwen3", [](json& j) { j["model_type"] = "qwen2"; }, "model_type");
  expect_refused("llama2", [](json& j) { j["rope_parameters"]["rope_theta"] = -1.0; }, "theta");
  expect_refused("llama2", [](json& j) { j["rms_norm_eps"] = 0.0; }, "rms_norm_eps");
  expect_refused("llama2", [](json& j) { j["rope_parameters"] = {{"rope_type", "linear"}}; }, "factor");
}

TEST(ArchConfig, HarmlessKeysAreAccepted) {
  json j = fixture_config("qwen2");
  j["max_window_layers"] = 3;  // no window is used
  j["_name_or_path"] = "somewhere";
  j["torch_dtype"] = "bfloat16";
  j["attention_dropout"] = 0.0;
  EXPECT_EQ(refusal(j), "");
  json g = fixture_config("gemma2");
  g["hidden_act"] = "gelu_pytorch_tanh";
  g["cache_implementation"] = "hybrid";
  g["sliding_window_size"] = 24;
  EXPECT_EQ(refusal(g), "");
  // Every fixture's own keys are known to the table.
  for (const std::string& v : kVariants) EXPECT_EQ(refusal(fixture_config(v)), "") << v;
}

TEST(ArchConfig, TableNamesEverySupportedArchitecture) {
  for (const char* name : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                           "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM"}) {
    const Architecture* a = find_architecture(name);
    ASSERT_NE(a, nullptr) << name;
    EXPECT_NE(supported_architectures_text().find(name), std::string::npos);
    EXPECT_FALSE(a->layer_tensors.empty());
  }
  EXPECT_EQ(find_architecture("GPT2LMHeadModel"), nullptr);
}

}  // namespace
}  // namespace hipstudio
