// llama2.c checkpoint -> ModelWeights (CPU, float32, Hugging Face RoPE layout).
#include <fstream>

#include <ATen/ATen.h>

#include "engine/formats/errors.h"
#include "engine/formats/llama2c_checkpoint.h"
#include "engine/model/model.h"

namespace hipstudio {

at::Tensor permute_interleaved_to_half(const at::Tensor& w, int64_t n_heads, int64_t head_dim) {
  // [H, hd/2, 2, in] -> [H, 2, hd/2, in]: pair (2p, 2p+1) becomes (p, p + hd/2).
  const int64_t in = w.size(1);
  return w.reshape({n_heads, head_dim / 2, 2, in}).transpose(1, 2).reshape({n_heads * head_dim, in}).contiguous();
}

at::Tensor permute_half_to_interleaved(const at::Tensor& w, int64_t n_heads, int64_t head_dim) {
  const int64_t in = w.size(1);
  return w.reshape({n_heads, 2, head_dim / 2, in}).transpose(1, 2).reshape({n_heads * head_dim, in}).contiguous();
}

ModelWeights load_llama2c_weights(const std::string& path, ModelConfig* config_out) {
  const Llama2cLayout layout = read_llama2c_layout(path);
  const ModelConfig& c = layout.config;

  // One read of the whole float section; views below slice it, fused tensors copy out of it.
  const int64_t floats = static_cast<int64_t>((layout.file_size - kLlama2cHeaderBytes) / sizeof(float));
  at::Tensor all = at::empty({floats}, at::kFloat);
  {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(kLlama2cHeaderBytes));
    in.read(reinterpret_cast<char*>(all.data_ptr<float>()), static_cast<std::streamsize>(floats * sizeof(float)));
    if (!in) throw InputError(path + ": read failed part-way (the file changed or the disk failed); try again");
  }
  auto slice = [&](uint64_t byte_offset, at::IntArrayRef shape) {
    int64_t numel = 1;
    for (int64_t s : shape) numel *= s;
    const int64_t start = static_cast<int64_t>((byte_offset - kLlama2cHeaderBytes) / sizeof(float));
    return all.narrow(0, start, numel).view(shape);
  };
  const int64_t L = c.n_layers, dim = c.dim, kv = c.kv_dim(), hidden = c.hidden_dim;
  at::Tensor rms_att = slice(layout.rms_att, {L, dim});
  at::Tensor wq = slice(layout.wq, {L, dim, dim});
  at::Tensor wk = slice(layout.wk, {L, kv, dim});
  at::Tensor wv = slice(layout.wv, {L, kv, dim});
  at::Tensor wo = slice(layout.wo, {L, dim, dim});
  at::Tensor rms_ffn = slice(layout.rms_ffn, {L, dim});
  at::Tensor w1 = slice(layout.w1, {L, hidden, dim});
  at::Tensor w2 = slice(layout.w2, {L, dim, hidden});
  at::Tensor w3 = slice(layout.w3, {L, hidden, dim});

  ModelWeights weights;
  weights.embedding = slice(layout.token_embedding, {c.vocab_size, dim}).clone();
  weights.classifier = layout.shared_classifier ? weights.embedding : slice(layout.wcls, {c.vocab_size, dim}).clone();
  weights.final_norm = slice(layout.rms_final, {dim}).clone();
  for (int64_t l = 0; l < L; ++l) {
    LayerWeights layer;
    layer.attn_norm = rms_att[l].clone();
    layer.wqkv = at::cat({permute_interleaved_to_half(wq[l], c.n_heads, c.head_dim),
                          permute_interleaved_to_half(wk[l], c.n_kv_heads, c.head_dim), wv[l]}, 0);
    layer.wo = wo[l].clone();
    layer.mlp_norm = rms_ffn[l].clone();
    layer.w13 = at::cat({w1[l], w3[l]}, 0);
    layer.w2 = w2[l].clone();
    weights.layers.push_back(std::move(layer));
  }
  *config_out = c;
  return weights;
}

}  // namespace hipstudio
