#pragma once
// The architecture of a Llama-family decoder, whatever file it came from. Loaders fill it and
// validate it; the forward pass reads it. Plain data, no LibTorch.
#include <cstdint>
#include <string>

namespace hipstudio {

// Hugging Face `rope_scaling`; only type "llama3" changes the frequencies (Llama 3.1 style).
struct RopeScaling {
  std::string type;                   // "" (none) or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;           // "llama2.c", "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"
  int64_t dim = 0;                    // hidden size
  int64_t hidden_dim = 0;             // MLP intermediate size
  int64_t n_layers = 0;
  int64_t n_heads = 0;                // query heads
  int64_t n_kv_heads = 0;             // key/value heads (grouped-query attention when < n_heads)
  int64_t head_dim = 0;               // usually dim / n_heads
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;            // context the model was trained for
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;   // classifier shares the embedding matrix
  bool attention_bias = false;        // q/k/v projections carry a bias (Qwen2)
  int32_t bos_id = 1;                 // -1 when the model has none
  int32_t eos_id = 2;                 // -1 when the model has none

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Throws InputError naming the first inconsistent field (`source` names the file for the message).
void validate_model_config(const ModelConfig& config, const std::string& source);

// Number of parameters the config implies (embeddings counted once when tied).
int64_t model_parameter_count(const ModelConfig& config);

}  // namespace hipstudio
