#include "engine/formats/model_config.h"

#include "engine/formats/errors.h"

namespace hipstudio {

namespace {
void require_positive(int64_t value, const char* field, const std::string& source) {
  if (value <= 0)
    throw InputError(source + ": " + field + " must be positive, got " + std::to_string(value));
}
}  // namespace

void validate_model_config(const ModelConfig& c, const std::string& source) {
  require_positive(c.dim, "hidden size (dim)", source);
  require_positive(c.hidden_dim, "intermediate size (hidden_dim)", source);
  require_positive(c.n_layers, "number of layers", source);
  require_positive(c.n_heads, "number of attention heads", source);
  require_positive(c.n_kv_heads, "number of key/value heads", source);
  require_positive(c.head_dim, "head dimension", source);
  require_positive(c.vocab_size, "vocabulary size", source);
  require_positive(c.max_seq_len, "context length (max_seq_len / max_position_embeddings)", source);
  if (c.n_heads % c.n_kv_heads != 0)
    throw InputError(source + ": the number of attention heads (" + std::to_string(c.n_heads) +
                     ") must be a multiple of the number of key/value heads (" +
                     std::to_string(c.n_kv_heads) + ")");
  if (c.head_dim % 2 != 0)
    throw InputError(source + ": head dimension " + std::to_string(c.head_dim) +
                     " is odd; rotary embeddings need an even head dimension");
  // Guard the arithmetic below (and allocations later) against absurd headers.
  const int64_t kLimit = int64_t{1} << 20;
  if (c.dim > kLimit || c.hidden_dim > 4 * kLimit || c.n_layers > 4096 || c.n_heads > 4096 ||
      c.vocab_size > 16 * kLimit || c.head_dim > 65536)
    throw InputError(source + ": model dimensions are implausibly large (dim " + std::to_string(c.dim) +
                     ", layers " + std::to_string(c.n_layers) + ", vocab " + std::to_string(c.vocab_size) +
                     "): the file is corrupt or not a model");
  if (!(c.rms_norm_eps > 0.0) || c.rms_norm_eps > 1.0)
    throw InputError(source + ": rms_norm_eps must be in (0, 1]");
  if (!(c.rope_theta > 0.0)) throw InputError(source + ": rope_theta must be positive");
  if (!c.rope_scaling.type.empty() && c.rope_scaling.type != "llama3")
    throw InputError(source + ": rope_scaling type '" + c.rope_scaling.type +
                     "' is not supported (supported: none, llama3)");
  if (c.rope_scaling.type == "llama3" &&
      (!(c.rope_scaling.factor >= 1.0) || !(c.rope_scaling.high_freq_factor > c.rope_scaling.low_freq_factor) ||
       c.rope_scaling.original_max_position_embeddings <= 0))
    throw InputError(source + ": rope_scaling (llama3) needs factor >= 1, high_freq_factor > low_freq_factor "
                     "and a positive original_max_position_embeddings");
  if (c.bos_id >= c.vocab_size || c.eos_id >= c.vocab_size)
    throw InputError(source + ": bos/eos token id outside the vocabulary");
}

int64_t model_parameter_count(const ModelConfig& c) {
  const int64_t attention = c.dim * (c.q_dim() + 2 * c.kv_dim()) + c.q_dim() * c.dim +
                            (c.attention_bias ? c.q_dim() + 2 * c.kv_dim() : 0);
  const int64_t mlp = 3 * c.dim * c.hidden_dim;
  const int64_t per_layer = attention + mlp + 2 * c.dim;
  const int64_t embeddings = c.vocab_size * c.dim;
  return embeddings * (c.tie_word_embeddings ? 1 : 2) + c.n_layers * per_layer + c.dim;
}

}  // namespace hipstudio
