#pragma once
// llama2.c checkpoints (Karpathy's run.c "version 0" format): a 7 x int32 header
//   dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size (negative = separate classifier), seq_len
// followed by float32 arrays in this order (shapes are [rows, cols], row-major, rows = outputs):
//   token_embedding [vocab, dim]; rms_att [L, dim]; wq [L, dim, dim]; wk [L, kv_dim, dim];
//   wv [L, kv_dim, dim]; wo [L, dim, dim]; rms_ffn [L, dim]; w1 [L, hidden, dim]; w2 [L, dim, hidden];
//   w3 [L, hidden, dim]; rms_final [dim]; freq_cis_real, freq_cis_imag [seq_len, head_dim/2] (unused);
//   wcls [vocab, dim] only when the classifier is not shared.
// This file parses and validates the layout only; engine/model reads the floats into tensors.
#include <cstdint>
#include <string>

#include "engine/formats/model_config.h"

namespace hipstudio {

struct Llama2cLayout {
  ModelConfig config;           // architecture "llama2.c", rope interleaved in the file (see loader)
  bool shared_classifier = true;
  // Byte offsets of each array in the file.
  uint64_t token_embedding = 0, rms_att = 0, wq = 0, wk = 0, wv = 0, wo = 0, rms_ffn = 0, w1 = 0,
           w2 = 0, w3 = 0, rms_final = 0, wcls = 0;
  uint64_t file_size = 0;       // exact size the header implies
};

constexpr uint64_t kLlama2cHeaderBytes = 7 * sizeof(int32_t);

// Parses the 28-byte header and checks it against the real file size. Throws InputError naming the
// problem (truncated file, trailing bytes, impossible dimensions) and the fix.
Llama2cLayout parse_llama2c_header(const unsigned char* header, uint64_t actual_file_size,
                                   const std::string& source);

// Reads the header of `path` and validates it (see above).
Llama2cLayout read_llama2c_layout(const std::string& path);

}  // namespace hipstudio
