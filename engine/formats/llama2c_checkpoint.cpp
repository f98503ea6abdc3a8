#include "engine/formats/llama2c_checkpoint.h"

#include <cstring>
#include <fstream>

#include "engine/formats/errors.h"

namespace hipstudio {

Llama2cLayout parse_llama2c_header(const unsigned char* header, uint64_t actual_size,
                                   const std::string& source) {
  int32_t h[7];
  std::memcpy(h, header, sizeof(h));
  Llama2cLayout layout;
  ModelConfig& c = layout.config;
  c.architecture = "llama2.c";
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  layout.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] < 0 ? -static_cast<int64_t>(h[5]) : h[5];
  c.max_seq_len = h[6];
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  c.tie_word_embeddings = layout.shared_classifier;
  c.rms_norm_eps = 1e-5;  // run.c's constant
  c.rope.theta = 10000.0;
  c.rope_local = c.rope;
  c.bos_id = 1;
  c.eos_id = 2;
  const std::string what = source + " (llama2.c checkpoint header: dim " + std::to_string(h[0]) + ", hidden " +
                           std::to_string(h[1]) + ", layers " + std::to_string(h[2]) + ", heads " +
                           std::to_string(h[3]) + ", kv heads " + std::to_string(h[4]) + ", vocab " +
                           std::to_string(h[5]) + ", seq_len " + std::to_string(h[6]) + ")";
  if (c.n_heads <= 0 || c.dim % c.n_heads != 0)
    throw InputError(what + ": dim must be a positive multiple of the number of heads; "
                     "this is not a llama2.c checkpoint or it is corrupt");
  validate_model_config(c, what);

  // Offsets in floats; every count fits comfortably in 64 bits after validation's bounds.
  const uint64_t dim = c.dim, hidden = c.hidden_dim, L = c.n_layers, kv = c.kv_dim(),
                 vocab = c.vocab_size, head = c.head_dim, seq = c.max_seq_len;
  uint64_t at = 0;
  auto take = [&](uint64_t floats) {
    const uint64_t start = kLlama2cHeaderBytes + at * sizeof(float);
    at += floats;
    return start;
  };
  layout.token_embedding = take(vocab * dim);
  layout.rms_att = take(L * dim);
  layout.wq = take(L * dim * dim);
  layout.wk = take(L * kv * dim);
  layout.wv = take(L * kv * dim);
  layout.wo = take(L * dim * dim);
  layout.rms_ffn = take(L * dim);
  layout.w1 = take(L * hidden * dim);
  layout.w2 = take(L * dim * hidden);
  layout.w3 = take(L * hidden * dim);
  layout.rms_final = take(dim);
  take(seq * head / 2);  // freq_cis_real (recomputed at run time)
  take(seq * head / 2);  // freq_cis_imag
  layout.wcls = layout.shared_classifier ? layout.token_embedding : take(vocab * dim);
  layout.file_size = kLlama2cHeaderBytes + at * sizeof(float);

  if (actual_size < layout.file_size)
    throw InputError(what + ": the file has " + std::to_string(actual_size) + " bytes but the header needs " +
                     std::to_string(layout.file_size) +
                     "; the checkpoint is truncated (re-download it, or run scripts/fetch-model for the default model)");
  if (actual_size > layout.file_size)
    throw InputError(what + ": the file has " + std::to_string(actual_size - layout.file_size) +
                     " bytes more than the header describes; it is not a llama2.c version-0 checkpoint "
                     "(export it with llama2.c's legacy format) or it is corrupt");
  return layout;
}

Llama2cLayout read_llama2c_layout(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot open the llama2.c checkpoint (check the path and permissions)");
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  if (size < kLlama2cHeaderBytes)
    throw InputError(path + ": only " + std::to_string(size) +
                     " bytes, too short for a llama2.c checkpoint header (28 bytes)");
  unsigned char header[kLlama2cHeaderBytes];
  in.seekg(0);
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  if (!in) throw InputError(path + ": could not read the checkpoint header");
  return parse_llama2c_header(header, size, path);
}

}  // namespace hipstudio
