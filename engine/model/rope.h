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

// inv_freq[p] = theta^(-2p/head_dim) in float32, then adjusted by the variant: "linear" divides by
// factor, "llama3" slows long wavelengths (Llama 3.1), "longrope" divides by long_factor[p] when
// sequence_length > original_max_position_embeddings and by short_factor[p] otherwise (Phi-3).
// float32, [head_dim/2], CPU.
at::Tensor rope_inverse_frequencies(const RopeParams& params, int64_t head_dim, int64_t sequence_length);

// Tables for positions [0, positions): longrope picks its factors by `positions` (the context the
// tables are made for, as transformers picks by the sequence length) and multiplies cos and sin by
// attention_factor. A model with windowed layers makes one table per RoPE it uses
// (ModelConfig::rope and ModelConfig::rope_local).
RopeTables make_rope_tables(const RopeParams& params, int64_t head_dim, int64_t positions,
                            const at::TensorOptions& options);
// The full-attention layers' tables (config.rope): kept while the forward pass moves to one table
// per RoPE; a model with rope_local != rope needs the form above for its windowed layers.
RopeTables make_rope_tables(const ModelConfig& config, int64_t positions, const at::TensorOptions& options);

// x: [heads, T, head_dim] at positions [start, start + T); returns the rotated tensor.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& tables, int64_t start);
// The same with the rows' table given: rows [T, 2, head_dim] of RopeTables::table, picked by a slice
// or, in a CUDA graph, by a device-side position.
at::Tensor rotate_rows(const at::Tensor& x, const at::Tensor& rows);

}  // namespace hipstudio
