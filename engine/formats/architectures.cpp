#include "engine/formats/architectures.h"

namespace hipstudio {

const std::vector<const char*> kCommonMathsKeys = {
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "vocab_size", "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings",
    "rope_theta", "rope_scaling", "rope_parameters", "bos_token_id", "eos_token_id"};

const std::vector<const char*> kCommonHarmlessKeys = {
    "architectures", "model_type", "_name_or_path", "dtype", "torch_dtype", "transformers_version",
    "initializer_range", "use_cache", "pad_token_id", "cache_implementation", "auto_map",
    "tokenizer_class", "output_attentions", "output_hidden_states", "return_dict", "chunk_size_feed_forward",
    "is_encoder_decoder", "id2label", "label2id", "problem_type", "tf_legacy_loss", "use_return_dict"};

namespace {

using R = TensorRole;
using W = TensorWhen;

// Separate q/k/v and gate/up projections, Llama's names (Llama, Mistral, Qwen2/3).
std::vector<LayerTensor> llama_layer(bool qk_norm) {
  std::vector<LayerTensor> t = {
      {R::kAttnNorm, "input_layernorm.weight", W::kAlways},
      {R::kWq, "self_attn.q_proj.weight", W::kAlways},
      {R::kWk, "self_attn.k_proj.weight", W::kAlways},
      {R::kWv, "self_attn.v_proj.weight", W::kAlways},
      {R::kBq, "self_attn.q_proj.bias", W::kAttentionBias},
      {R::kBk, "self_attn.k_proj.bias", W::kAttentionBias},
      {R::kBv, "self_attn.v_proj.bias", W::kAttentionBias},
      {R::kWo, "self_attn.o_proj.weight", W::kAlways},
      {R::kBo, "self_attn.o_proj.bias", W::kAttentionOutBias},
      {R::kMlpNorm, "post_attention_layernorm.weight", W::kAlways},
      {R::kWgate, "mlp.gate_proj.weight", W::kAlways},
      {R::kWup, "mlp.up_proj.weight", W::kAlways},
      {R::kWdown, "mlp.down_proj.weight", W::kAlways},
      {R::kBgate, "mlp.gate_proj.bias", W::kMlpBias},
      {R::kBup, "mlp.up_proj.bias", W::kMlpBias},
      {R::kBdown, "mlp.down_proj.bias", W::kMlpBias},
  };
  if (qk_norm) {
    t.push_back({R::kQNorm, "self_attn.q_norm.weight", W::kQkNorm});
    t.push_back({R::kKNorm, "self_attn.k_norm.weight", W::kQkNorm});
  }
  return t;
}

// Gemma: "post_attention_layernorm" is the norm ON the attention output; the pre-MLP norm is
// "pre_feedforward_layernorm".
std::vector<LayerTensor> gemma_layer(bool qk_norm) {
  std::vector<LayerTensor> t = {
      {R::kAttnNorm, "input_layernorm.weight", W::kAlways},
      {R::kWq, "self_attn.q_proj.weight", W::kAlways},
      {R::kWk, "self_attn.k_proj.weight", W::kAlways},
      {R::kWv, "self_attn.v_proj.weight", W::kAlways},
      {R::kBq, "self_attn.q_proj.bias", W::kAttentionBias},
      {R::kBk, "self_attn.k_proj.bias", W::kAttentionBias},
      {R::kBv, "self_attn.v_proj.bias", W::kAttentionBias},
      {R::kWo, "self_attn.o_proj.weight", W::kAlways},
      {R::kBo, "self_attn.o_proj.bias", W::kAttentionOutBias},
      {R::kPostAttnNorm, "post_attention_layernorm.weight", W::kAlways},
      {R::kMlpNorm, "pre_feedforward_layernorm.weight", W::kAlways},
      {R::kWgate, "mlp.gate_proj.weight", W::kAlways},
      {R::kWup, "mlp.up_proj.weight", W::kAlways},
      {R::kWdown, "mlp.down_proj.weight", W::kAlways},
      {R::kPostMlpNorm, "post_feedforward_layernorm.weight", W::kAlways},
  };
  if (qk_norm) {
    t.push_back({R::kQNorm, "self_attn.q_norm.weight", W::kQkNorm});
    t.push_back({R::kKNorm, "self_attn.k_norm.weight", W::kQkNorm});
  }
  return t;
}

// Phi-3 fuses q/k/v (rows q, k, v) and gate/up (rows gate, up): the same order as wqkv and w13.
std::vector<LayerTensor> phi3_layer() {
  return {
      {R::kAttnNorm, "input_layernorm.weight", W::kAlways},
      {R::kWqkv, "self_attn.qkv_proj.weight", W::kAlways},
      {R::kWo, "self_attn.o_proj.weight", W::kAlways},
      {R::kMlpNorm, "post_attention_layernorm.weight", W::kAlways},
      {R::kWgateUp, "mlp.gate_up_proj.weight", W::kAlways},
      {R::kWdown, "mlp.down_proj.weight", W::kAlways},
  };
}

const NeutralKey kNoDropout{"attention_dropout", {"0", "0.0"}};
const NeutralKey kNoBias{"attention_bias", {"false"}};
const NeutralKey kCausal{"use_bidirectional_attention", {"false", "null"}};

std::vector<Architecture> make_table() {
  std::vector<Architecture> t;
  {
    Architecture a{};
    a.class_name = "LlamaForCausalLM";
    a.model_type = "llama";
    a.maths_keys = {"hidden_act", "attention_bias", "mlp_bias"};
    a.neutral_keys = {kNoDropout, {"pretraining_tp", {"1"}}};
    a.activation_key = "hidden_act";
    a.default_activation = Activation::kSilu;
    a.attention_bias_key = a.attention_bias_covers_o = a.mlp_bias_key = true;
    a.window_form = WindowForm::kNone;
    a.layer_tensors = llama_layer(false);
    t.push_back(a);
  }
  {
    Architecture a{};
    a.class_name = "MistralForCausalLM";
    a.model_type = "mistral";
    a.maths_keys = {"hidden_act", "sliding_window"};
    a.neutral_keys = {kNoDropout, kNoBias};
    a.defaults.sliding_window = 4096;  // MistralConfig's default when the key is absent
    a.activation_key = "hidden_act";
    a.default_activation = Activation::kSilu;
    a.window_form = WindowForm::kAllLayers;
    a.layer_tensors = llama_layer(false);
    t.push_back(a);
  }
  for (bool qwen3 : {false, true}) {
    Architecture a{};
    a.class_name = qwen3 ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM";
    a.model_type = qwen3 ? "qwen3" : "qwen2";
    a.maths_keys = {"hidden_act", "use_sliding_window", "sliding_window", "max_window_layers", "layer_types"};
    if (qwen3) a.maths_keys.push_back("attention_bias");
    a.neutral_keys = {kNoDropout};
    if (!qwen3) a.neutral_keys.push_back({"use_mrope", {"false"}});
    a.defaults.sliding_window = 4096;
    a.defaults.max_window_layers = 28;
    if (qwen3) a.defaults.head_dim = 128;  // Qwen3Config's default, not hidden / heads
    a.activation_key = "hidden_act";
    a.default_activation = Activation::kSilu;
    a.qkv_bias_always = !qwen3;
    a.attention_bias_key = a.attention_bias_covers_o = qwen3;
    a.qk_norm = qwen3;
    a.window_form = WindowForm::kFromMaxWindowLayers;
    a.layer_tensors = llama_layer(qwen3);
    t.push_back(a);
  }
  for (bool gemma3 : {false, true}) {
    Architecture a{};
    a.class_name = gemma3 ? "Gemma3ForCausalLM" : "Gemma2ForCausalLM";
    a.model_type = gemma3 ? "gemma3_text" : "gemma2";
    a.maths_keys = {"hidden_activation", "hidden_act", "query_pre_attn_scalar", "attn_logit_softcapping",
                    "final_logit_softcapping", "sliding_window", "layer_types", "attention_bias"};
    if (gemma3) {
      a.maths_keys.push_back("rope_local_base_freq");
      a.maths_keys.push_back("sliding_window_pattern");
      a.maths_keys.push_back("_sliding_window_pattern");
    } else {
      a.maths_keys.push_back("sliding_window_size");  // older Gemma 2 configs: must equal sliding_window
    }
    a.neutral_keys = {kNoDropout, kCausal};
    a.defaults.rope_theta = gemma3 ? 1000000.0 : 10000.0;
    a.defaults.head_dim = 256;
    a.defaults.tie_word_embeddings = true;
    a.defaults.sliding_window = 4096;
    a.defaults.query_pre_attn_scalar = 256;
    a.defaults.attn_softcap = gemma3 ? 0.0 : 50.0;
    a.defaults.final_softcap = gemma3 ? 0.0 : 30.0;
    a.defaults.local_rope_theta = gemma3 ? 10000.0 : 0.0;
    a.defaults.sliding_window_pattern = gemma3 ? 6 : 2;
    a.activation_key = "hidden_activation";
    a.default_activation = Activation::kGeluTanh;
    a.attention_bias_key = a.attention_bias_covers_o = true;
    a.qk_norm = gemma3;
    a.sandwich_norms = a.norm_plus_one = a.scale_embeddings = true;
    a.window_form = gemma3 ? WindowForm::kPattern : WindowForm::kAlternating;
    a.layer_tensors = gemma_layer(gemma3);
    t.push_back(a);
  }
  {
    Architecture a{};
    a.class_name = "Phi3ForCausalLM";
    a.model_type = "phi3";
    a.maths_keys = {"hidden_act", "sliding_window", "original_max_position_embeddings", "partial_rotary_factor"};
    a.neutral_keys = {kNoDropout, kNoBias, {"embd_pdrop", {"0", "0.0"}}, {"resid_pdrop", {"0", "0.0"}}};
    a.defaults.rms_norm_eps = 1e-5;
    a.defaults.original_max_position_embeddings = 4096;
    a.activation_key = "hidden_act";
    a.default_activation = Activation::kSilu;
    a.window_form = WindowForm::kAllLayers;
    a.layer_tensors = phi3_layer();
    t.push_back(a);
  }
  return t;
}

}  // namespace

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> table = make_table();
  return table;
}

const Architecture* find_architecture(const std::string& class_name) {
  for (const Architecture& a : architectures())
    if (class_name == a.class_name) return &a;
  return nullptr;
}

std::string supported_architectures_text() {
  std::string s;
  for (const Architecture& a : architectures()) s += (s.empty() ? "" : ", ") + std::string(a.class_name);
  return s;
}

bool layer_tensor_present(const LayerTensor& t, const ModelConfig& c) {
  switch (t.when) {
    case TensorWhen::kAlways: return true;
    case TensorWhen::kAttentionBias: return c.attention_bias;
    case TensorWhen::kAttentionOutBias: return c.attention_out_bias;
    case TensorWhen::kMlpBias: return c.mlp_bias;
    case TensorWhen::kQkNorm: return c.qk_norm;
  }
  return false;
}

std::vector<int64_t> layer_tensor_shape(TensorRole role, const ModelConfig& c) {
  const int64_t dim = c.dim, hidden = c.hidden_dim, qd = c.q_dim(), kvd = c.kv_dim();
  switch (role) {
    case R::kAttnNorm: case R::kPostAttnNorm: case R::kMlpNorm: case R::kPostMlpNorm: return {dim};
    case R::kWq: return {qd, dim};
    case R::kWk: case R::kWv: return {kvd, dim};
    case R::kWqkv: return {qd + 2 * kvd, dim};
    case R::kBq: return {qd};
    case R::kBk: case R::kBv: return {kvd};
    case R::kQNorm: case R::kKNorm: return {c.head_dim};
    case R::kWo: return {dim, qd};
    case R::kBo: return {dim};
    case R::kWgate: case R::kWup: return {hidden, dim};
    case R::kWgateUp: return {2 * hidden, dim};
    case R::kBgate: case R::kBup: return {hidden};
    case R::kWdown: return {dim, hidden};
    case R::kBdown: return {dim};
  }
  return {};
}

bool is_norm_role(TensorRole role) {
  return role == R::kAttnNorm || role == R::kPostAttnNorm || role == R::kMlpNorm || role == R::kPostMlpNorm ||
         role == R::kQNorm || role == R::kKNorm;
}

}  // namespace hipstudio
