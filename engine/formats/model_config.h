#pragma once
// The architecture of a Llama-family decoder, whatever file it came from. Loaders fill it and
// validate it; the forward pass reads it. Plain data, no LibTorch.
//
// Every field that changes the maths has a default that reproduces plain Llama, so a llama2.c
// checkpoint or a Llama config.json leaves them untouched. engine/formats/architectures.h says which
// config.json keys set which field for each architecture.
#include <cstdint>
#include <string>
#include <vector>

namespace hipstudio {

// One RoPE variant (one entry of transformers' `rope_parameters`, or the older top-level
// `rope_theta` + `rope_scaling`). engine/model/rope.h turns it into frequencies.
struct RopeParams {
  std::string type = "default";  // "default", "linear", "llama3", "longrope"
  double theta = 10000.0;
  double factor = 1.0;  // linear (frequencies / factor), llama3, longrope (max_position_embeddings / original)
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 0;          // llama3, longrope
  std::vector<double> short_factor, long_factor;         // longrope, head_dim/2 each
  double attention_factor = 1.0;  // longrope: cos and sin are multiplied by it
};

inline bool operator==(const RopeParams& a, const RopeParams& b) {
  return a.type == b.type && a.theta == b.theta && a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings &&
         a.short_factor == b.short_factor && a.long_factor == b.long_factor && a.attention_factor == b.attention_factor;
}

// The MLP's gate activation: SiLU (Llama, Mistral, Qwen, Phi-3) or GELU with the tanh
// approximation (Gemma's gelu_pytorch_tanh).
enum class Activation { kSilu, kGeluTanh };

struct ModelConfig {
  std::string architecture;  // "llama2.c" or a Hugging Face class name from engine/formats/architectures.h
  int64_t dim = 0;           // hidden size
  int64_t hidden_dim = 0;    // MLP intermediate size
  int64_t n_layers = 0;
  int64_t n_heads = 0;       // query heads
  int64_t n_kv_heads = 0;    // key/value heads (grouped-query attention when < n_heads)
  int64_t head_dim = 0;      // dim / n_heads unless the config says otherwise (Qwen3, Gemma)
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;   // context the model was trained for
  double rms_norm_eps = 1e-5;
  RopeParams rope;                    // full-attention layers
  RopeParams rope_local;              // sliding-window layers (Gemma 3's local base); == rope elsewhere
  std::vector<int64_t> layer_window;  // [n_layers]: 0 = full attention; W > 0: the query at p sees keys (p-W, p]
  Activation activation = Activation::kSilu;
  bool sandwich_norms = false;  // Gemma 2/3: RMSNorm on the attention output and on the MLP output
                                // (LayerWeights::post_attn_norm / post_mlp_norm) before each residual add
  bool qk_norm = false;         // Qwen3, Gemma 3: RMSNorm over head_dim on each q and k head before RoPE
  double embedding_scale = 1.0; // Gemma: sqrt(hidden_size) (transformers rounds it to the run dtype)
  double attention_scale = 0.0; // softmax scale; 0 means 1/sqrt(head_dim); Gemma: query_pre_attn_scalar^-0.5
  double attn_softcap = 0.0;    // 0 = none; else each score s -> cap * tanh(s / cap) (after scaling)
  double final_softcap = 0.0;   // the same on the final logits
  bool tie_word_embeddings = false;  // classifier shares the embedding matrix
  bool attention_bias = false;       // q/k/v projections carry a bias (Qwen2 always; Llama's attention_bias)
  bool attention_out_bias = false;   // o_proj carries a bias (Llama's attention_bias)
  bool mlp_bias = false;             // gate, up and down projections carry biases (Llama's mlp_bias)
  int32_t bos_id = 1;                // -1 when the model has none
  int32_t eos_id = 2;                // -1 when the model has none

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // Layers with layer_window == 0: the layers HiP can replace (l_d counts these). A config whose
  // layer_window is empty (built by hand) counts every layer.
  int64_t full_attention_layers() const;
  // The window of layer l (0 = full attention); 0 for every layer when layer_window is empty.
  int64_t window(int64_t layer) const {
    return layer_window.empty() ? 0 : layer_window[static_cast<size_t>(layer)];
  }
  // The RoPE of layer l: rope_local for a windowed layer, rope otherwise.
  const RopeParams& rope_for(int64_t layer) const { return window(layer) > 0 ? rope_local : rope; }
};

// Throws InputError naming the first inconsistent field (`source` names the file for the message).
void validate_model_config(const ModelConfig& config, const std::string& source);

// Number of parameters the config implies (embeddings counted once when tied; biases, q/k norms and
// sandwich norms counted when the config has them).
int64_t model_parameter_count(const ModelConfig& config);
// Of those, the RMSNorm weights, which stay float32 in every run dtype.
int64_t model_norm_parameter_count(const ModelConfig& config);

}  // namespace hipstudio
