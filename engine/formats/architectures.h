#pragma once
// The one table of Hugging Face architectures HiP Studio runs. Each entry names its config.json
// keys (the ones that change the maths, the harmless ones, the ones accepted only at a neutral
// value), the defaults transformers uses when a key is absent, its switches (biases, norms,
// activation, windows) and its tensor names. The config parser, the loader, the converter, the
// memory estimate and every error message read it; adding an architecture is one entry here plus
// its maths in the forward pass (docs: "Adding an architecture"). Plain data, no LibTorch.
#include <string>
#include <vector>

#include "engine/formats/model_config.h"

namespace hipstudio {

// How config.json says which layers attend through a sliding window.
enum class WindowForm {
  kAllLayers,            // Mistral, Phi-3: `sliding_window` (null = none) applies to every layer
  kFromMaxWindowLayers,  // Qwen2/3: with `use_sliding_window`, `layer_types` or else layers >= `max_window_layers`
  kAlternating,          // Gemma 2: `layer_types`, else even layers sliding
  kPattern,              // Gemma 3: `layer_types`, else every `sliding_window_pattern`-th layer full
  kNone,                 // Llama: no window keys
};

// What a tensor of a layer holds (the loader's destination).
enum class TensorRole {
  kAttnNorm, kWq, kWk, kWv, kWqkv, kBq, kBk, kBv, kQNorm, kKNorm, kWo, kBo, kPostAttnNorm,
  kMlpNorm, kWgate, kWup, kWgateUp, kBgate, kBup, kWdown, kBdown, kPostMlpNorm,
};

// When a layer tensor is present: always, or when the config switch is on.
enum class TensorWhen { kAlways, kAttentionBias, kAttentionOutBias, kMlpBias, kQkNorm };

struct LayerTensor {
  TensorRole role;
  const char* name;  // after "model.layers.<l>."
  TensorWhen when;
};

// A config key accepted only at these values (JSON text as nlohmann::json::dump writes it), e.g.
// attention_dropout 0: any other value would change results and is not implemented.
struct NeutralKey {
  const char* name;
  std::vector<std::string> values;
};

// What transformers' config class assumes when a key is absent from config.json.
struct ArchDefaults {
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  int64_t head_dim = 0;              // 0: hidden_size / num_attention_heads
  bool tie_word_embeddings = false;
  int64_t sliding_window = 0;        // 0: none
  double query_pre_attn_scalar = 0;  // 0: not used (scale 1/sqrt(head_dim))
  double attn_softcap = 0, final_softcap = 0;
  double local_rope_theta = 0;       // Gemma 3's rope_local_base_freq
  int64_t sliding_window_pattern = 0;
  int64_t max_window_layers = 0;
  int64_t original_max_position_embeddings = 0;  // Phi-3 (top level)
};

struct Architecture {
  const char* class_name;  // config.json "architectures"[0]
  const char* model_type;  // config.json "model_type"
  // Keys that change the maths, read by the parser (engine/formats/hf_config.cpp), besides the
  // dimensions every entry has (kCommonMathsKeys).
  std::vector<const char*> maths_keys;
  std::vector<const char*> harmless_keys;  // besides kCommonHarmlessKeys: read by nothing, change nothing
  std::vector<NeutralKey> neutral_keys;
  ArchDefaults defaults;
  const char* activation_key;               // "hidden_act" or Gemma's "hidden_activation"
  Activation default_activation;
  bool qkv_bias_always = false;             // Qwen2: q/k/v biases whatever the config says
  bool attention_bias_key = false;          // `attention_bias` adds q/k/v biases...
  bool attention_bias_covers_o = false;     // ...and the o_proj bias (Llama, Qwen3, Gemma)
  bool mlp_bias_key = false;                // `mlp_bias`: gate/up/down biases (Llama)
  bool qk_norm = false;
  bool sandwich_norms = false;
  bool norm_plus_one = false;               // Gemma: RMSNorm multiplies by (1 + w); folded at load
  bool scale_embeddings = false;            // Gemma: embeddings times sqrt(hidden_size)
  WindowForm window_form = WindowForm::kNone;
  std::vector<LayerTensor> layer_tensors;
};

// Keys every entry reads (dimensions, RoPE, norms, embeddings, token ids).
extern const std::vector<const char*> kCommonMathsKeys;
// Keys every entry accepts whatever their value: they do not change what the model computes.
extern const std::vector<const char*> kCommonHarmlessKeys;

// Model-level tensor names, the same in every entry.
inline constexpr const char* kEmbeddingTensor = "model.embed_tokens.weight";
inline constexpr const char* kFinalNormTensor = "model.norm.weight";
inline constexpr const char* kClassifierTensor = "lm_head.weight";

const std::vector<Architecture>& architectures();
// nullptr when the class is not in the table.
const Architecture* find_architecture(const std::string& class_name);
// "LlamaForCausalLM, MistralForCausalLM, ..." for messages.
std::string supported_architectures_text();

// Whether a layer tensor is present for this config (its `when` against the config's switches).
bool layer_tensor_present(const LayerTensor& t, const ModelConfig& config);
// The shape of a layer tensor under this config.
std::vector<int64_t> layer_tensor_shape(TensorRole role, const ModelConfig& config);
// Whether the role is an RMSNorm weight (stored float32, folded (1 + w) under norm_plus_one).
bool is_norm_role(TensorRole role);

}  // namespace hipstudio
