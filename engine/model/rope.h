#pragma once
// Rotary position embeddings in the Hugging Face "rotate-half" layout: dimension p of a head
// rotates with dimension p + head_dim/2 by angle position * inv_freq[p].
#include <ATen/core/Tensor.h>

#include "engine/formats/model_config.h"

namespace hipstudio {

struct RopeTables {
  // [positions, 2, head_dim], run dtype, on the run device: per position its cos row, then its sin
  // row with the first half negated (rotate-half's sign folded in, so rotating is a roll, a multiply
  // and a fused multiply-add). One table, so a CUDA graph picks a position's rows with one gather.
  at::Tensor table;
};

// inv_freq[p] = theta^(-2p/head_dim), adjusted by llama3 rope_scaling when the config has it.
// float32, [head_dim/2], CPU.
at::Tensor rope_inverse_frequencies(const ModelConfig& config);

RopeTables make_rope_tables(const ModelConfig& config, int64_t positions, const at::TensorOptions& options);

// x: [heads, T, head_dim] at positions [start, start + T); returns the rotated tensor.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& tables, int64_t start);
// The same with the rows' table given: rows [T, 2, head_dim] of RopeTables::table, picked by a slice
// or, in a CUDA graph, by a device-side position.
at::Tensor rotate_rows(const at::Tensor& x, const at::Tensor& rows);

}  // namespace hipstudio
