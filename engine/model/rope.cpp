#include "engine/model/rope.h"

#include <cmath>

#include <ATen/ATen.h>

namespace hipstudio {

at::Tensor rope_inverse_frequencies(const RopeParams& r, int64_t head_dim, int64_t sequence_length) {
  const int64_t half = head_dim / 2;
  at::Tensor inv = at::empty({half}, at::kFloat);
  float* f = inv.data_ptr<float>();
  if (r.type == "longrope") {
    // Phi-3: per-frequency divisors, the long ones past the pretraining context; float32 as
    // transformers' 1 / (ext_factors * base^(2p/d)).
    const bool long_context = sequence_length > r.original_max_position_embeddings;
    const std::vector<double>& ext = long_context ? r.long_factor : r.short_factor;
    for (int64_t p = 0; p < half; ++p)
      f[p] = 1.0f / (static_cast<float>(ext[static_cast<size_t>(p)]) *
                     std::pow(static_cast<float>(r.theta), static_cast<float>(2 * p) / static_cast<float>(head_dim)));
    return inv;
  }
  for (int64_t p = 0; p < half; ++p) {
    // Computed in float32 as llama2.c's run.c and Hugging Face both do, so logits match theirs.
    f[p] = 1.0f / std::pow(static_cast<float>(r.theta), static_cast<float>(2 * p) / static_cast<float>(head_dim));
  }
  if (r.type == "linear") {
    for (int64_t p = 0; p < half; ++p) f[p] /= static_cast<float>(r.factor);
  } else if (r.type == "llama3") {
    // Llama 3.1: long wavelengths are slowed by `factor`, short ones kept, the band between blended.
    const double old_len = static_cast<double>(r.original_max_position_embeddings);
    const double low_wavelen = old_len / r.low_freq_factor;
    const double high_wavelen = old_len / r.high_freq_factor;
    for (int64_t p = 0; p < half; ++p) {
      const double freq = f[p];
      const double wavelen = 2.0 * M_PI / freq;
      double scaled = freq;
      if (wavelen > low_wavelen) {
        scaled = freq / r.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        scaled = (1.0 - smooth) * freq / r.factor + smooth * freq;
      }
      f[p] = static_cast<float>(scaled);
    }
  }
  return inv;
}

RopeTables make_rope_tables(const RopeParams& r, int64_t head_dim, int64_t positions, const at::TensorOptions& options) {
  at::Tensor inv = rope_inverse_frequencies(r, head_dim, positions);
  at::Tensor pos = at::arange(positions, at::kFloat);
  at::Tensor angles = at::outer(pos, inv);                                // [positions, head_dim/2]
  at::Tensor cos = at::cat({angles, angles}, 1).cos();                    // [positions, head_dim]
  at::Tensor sin = at::cat({angles.sin().neg(), angles.sin()}, 1);        // first half negated
  if (r.type == "longrope" && r.attention_factor != 1.0) {
    // transformers multiplies cos and sin by the attention factor in float32, then casts.
    const float scale = static_cast<float>(r.attention_factor);
    cos = cos * scale;
    sin = sin * scale;
  }
  return RopeTables{at::stack({cos, sin}, 1).to(options)};
}

RopeTables make_rope_tables(const ModelConfig& c, int64_t positions, const at::TensorOptions& options) {
  return make_rope_tables(c.rope, c.head_dim, positions, options);
}

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& t, int64_t start) {
  return rotate_rows(x, t.table.narrow(0, start, x.size(1)));
}

// x * cos + rotate_half(x) * sin, with rotate_half(x) = [-x2, x1] = roll(x) * [-1, 1] and the sign
// already in the table's sin row.
at::Tensor rotate_rows(const at::Tensor& x, const at::Tensor& rows) {
  const int64_t half = x.size(2) / 2;  // the rows broadcast over heads
  return at::addcmul(x * rows.select(1, 0), x.roll(half, 2), rows.select(1, 1));
}

}  // namespace hipstudio
