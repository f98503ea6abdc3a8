#include "engine/formats/model_config.h"

#include <cmath>
#include <utility>

#include "engine/formats/errors.h"

namespace hipstudio {

namespace {
// One RoPE variant's numbers: finite, in range, and the per-frequency lists head_dim/2 long.
void validate_rope(const RopeParams& p, const ModelConfig& c, const char* what, const std::string& source) {
  const std::string name = source + ": " + what;
  if (!std::isfinite(p.theta) || !(p.theta > 0.0)) throw InputError(name + " theta (rope_theta) must be a positive finite number");
  if (p.type == "default") return;
  if (!std::isfinite(p.factor) || !(p.factor > 0.0)) throw InputError(name + " factor must be a positive finite number");
  if (p.type == "linear") return;
  if (p.original_max_position_embeddings <= 0)
    throw InputError(name + " (" + p.type + ") needs a positive original_max_position_embeddings");
  if (p.type == "llama3") {
    if (!(p.factor >= 1.0) || !std::isfinite(p.low_freq_factor) || !std::isfinite(p.high_freq_factor) ||
        !(p.low_freq_factor > 0.0) || !(p.high_freq_factor > p.low_freq_factor))
      throw InputError(name + " (llama3) needs factor >= 1 and high_freq_factor > low_freq_factor > 0");
    return;
  }
  if (p.type == "longrope") {
    const size_t half = static_cast<size_t>(c.head_dim / 2);
    if (p.short_factor.size() != half || p.long_factor.size() != half)
      throw InputError(name + " (longrope) needs short_factor and long_factor of head_dim/2 = " + std::to_string(half) +
                       " entries each");
    if (!std::isfinite(p.attention_factor) || !(p.attention_factor > 0.0))
      throw InputError(name + " (longrope) attention_factor must be a positive finite number");
    return;
  }
  throw InputError(name + " type '" + p.type + "' is not supported (supported: default, linear, llama3, longrope)");
}

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
  if (!std::isfinite(c.rms_norm_eps) || !(c.rms_norm_eps > 0.0) || c.rms_norm_eps > 1.0)
    throw InputError(source + ": rms_norm_eps must be in (0, 1]");
  validate_rope(c.rope, c, "rope", source);
  validate_rope(c.rope_local, c, "local rope", source);
  if (!c.layer_window.empty() && static_cast<int64_t>(c.layer_window.size()) != c.n_layers)
    throw InputError(source + ": the per-layer window list has " + std::to_string(c.layer_window.size()) +
                     " entries for " + std::to_string(c.n_layers) + " layers");
  for (int64_t w : c.layer_window)
    if (w < 0) throw InputError(source + ": a sliding window must be positive (0 for full attention)");
  for (const auto& [value, name] : {std::pair{c.embedding_scale, "embedding scale"},
                                    std::pair{c.attention_scale, "attention scale (query_pre_attn_scalar)"},
                                    std::pair{c.attn_softcap, "attn_logit_softcapping"},
                                    std::pair{c.final_softcap, "final_logit_softcapping"}})
    if (!std::isfinite(value) || value < 0.0)
      throw InputError(source + ": " + name + " must be a finite non-negative number");
  if (!(c.embedding_scale > 0.0)) throw InputError(source + ": embedding scale must be positive");
  if (c.bos_id >= c.vocab_size || c.eos_id >= c.vocab_size)
    throw InputError(source + ": bos/eos token id outside the vocabulary");
}

int64_t ModelConfig::full_attention_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < n_layers; ++l) n += window(l) == 0;
  return n;
}

int64_t model_parameter_count(const ModelConfig& c) {
  const int64_t attention = c.dim * (c.q_dim() + 2 * c.kv_dim()) + c.q_dim() * c.dim +
                            (c.attention_bias ? c.q_dim() + 2 * c.kv_dim() : 0) + (c.attention_out_bias ? c.dim : 0) +
                            (c.qk_norm ? 2 * c.head_dim : 0);
  const int64_t mlp = 3 * c.dim * c.hidden_dim + (c.mlp_bias ? 2 * c.hidden_dim + c.dim : 0);
  const int64_t per_layer = attention + mlp + (c.sandwich_norms ? 4 : 2) * c.dim;
  const int64_t embeddings = c.vocab_size * c.dim;
  return embeddings * (c.tie_word_embeddings ? 1 : 2) + c.n_layers * per_layer + c.dim;
}

// RMSNorm weights (float32 whatever the run dtype): the final norm, 2 or 4 per layer, q/k norms.
int64_t model_norm_parameter_count(const ModelConfig& c) {
  return c.dim + c.n_layers * ((c.sandwich_norms ? 4 : 2) * c.dim + (c.qk_norm ? 2 * c.head_dim : 0));
}

}  // namespace hipstudio
