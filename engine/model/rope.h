#pragma once
// Rotary position embeddings in the Hugging Face "rotate-half" layout: dimension p of a head
// rotates with dimension p + head_dim/2 by angle position * inv_freq[p].
#include <ATen/core/Tensor.h>

#include "engine/formats/model_config.h"

namespace hipstudio {

struct RopeTables {
  at::Tensor cos;  // [positions, head_dim], run dtype, on the run device
  at::Tensor sin;  // [positions, head_dim]
};

// inv_freq[p] = theta^(-2p/head_dim), adjusted by llama3 rope_scaling when the config has it.
// float32, [head_dim/2], CPU.
at::Tensor rope_inverse_frequencies(const ModelConfig& config);

RopeTables make_rope_tables(const ModelConfig& config, int64_t positions, const at::TensorOptions& options);

// x: [heads, T, head_dim] at positions [start, start + T); returns the rotated tensor.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& tables, int64_t start);
// The same with the rows' tables given: cos, sin [T, head_dim] (rows of RopeTables, picked by a
// slice or, in a CUDA graph, by a device-side position).
at::Tensor rotate_rows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace hipstudio
