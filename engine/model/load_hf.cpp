// Hugging Face directory (config.json + safetensors) -> ModelWeights (CPU, float32).
#include <ATen/ATen.h>

#include "engine/formats/errors.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "engine/model/model.h"

namespace hipstudio {

namespace {

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Copies one tensor out of the mapping into a CPU tensor of `target` dtype, checking its shape.
at::Tensor read_tensor(const SafetensorsModel& files, const std::string& name, at::IntArrayRef expected,
                       at::ScalarType target) {
  const TensorInfo& info = files.get(name);
  at::ScalarType type;
  switch (info.dtype) {
    case DType::F32: type = at::kFloat; break;
    case DType::F16: type = at::kHalf; break;
    case DType::BF16: type = at::kBFloat16; break;
    default:
      throw InputError(files.dir() + ": tensor '" + name + "' has dtype " + dtype_name(info.dtype) +
                       ", which is not supported (supported: F32, F16, BF16); quantized checkpoints must be "
                       "de-quantized first");
  }
  if (!std::equal(info.shape.begin(), info.shape.end(), expected.begin(), expected.end()))
    throw InputError(files.dir() + ": tensor '" + name + "' has shape " + shape_text(info.shape) +
                     " but config.json implies " + shape_text(expected) + "; config.json does not match the weights");
  // from_blob does not own the mapping: clone / .to copies before the mapping can go away.
  at::Tensor view = at::from_blob(const_cast<void*>(info.data), info.shape, at::TensorOptions().dtype(type));
  return type == target ? view.clone() : view.to(target);
}

}  // namespace

ModelWeights load_hf_weights(const std::string& dir, at::ScalarType dtype, ModelConfig* config_out) {
  const ModelConfig c = read_hf_config(dir + "/config.json");
  const SafetensorsModel files(dir);
  const int64_t dim = c.dim, hidden = c.hidden_dim, qd = c.q_dim(), kvd = c.kv_dim();

  ModelWeights weights;
  weights.embedding = read_tensor(files, "model.embed_tokens.weight", {c.vocab_size, dim}, dtype);
  weights.final_norm = read_tensor(files, "model.norm.weight", {dim}, dtype);
  if (c.tie_word_embeddings || !files.find("lm_head.weight")) {
    if (!c.tie_word_embeddings)
      throw InputError(dir + ": missing tensor 'lm_head.weight' and tie_word_embeddings is false in config.json");
    weights.classifier = weights.embedding;
  } else {
    weights.classifier = read_tensor(files, "lm_head.weight", {c.vocab_size, dim}, dtype);
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights layer;
    layer.attn_norm = read_tensor(files, p + "input_layernorm.weight", {dim}, dtype);
    layer.wqkv = at::cat({read_tensor(files, p + "self_attn.q_proj.weight", {qd, dim}, dtype),
                          read_tensor(files, p + "self_attn.k_proj.weight", {kvd, dim}, dtype),
                          read_tensor(files, p + "self_attn.v_proj.weight", {kvd, dim}, dtype)}, 0);
    if (c.attention_bias)
      layer.bqkv = at::cat({read_tensor(files, p + "self_attn.q_proj.bias", {qd}, dtype),
                            read_tensor(files, p + "self_attn.k_proj.bias", {kvd}, dtype),
                            read_tensor(files, p + "self_attn.v_proj.bias", {kvd}, dtype)}, 0);
    layer.wo = read_tensor(files, p + "self_attn.o_proj.weight", {dim, qd}, dtype);
    layer.mlp_norm = read_tensor(files, p + "post_attention_layernorm.weight", {dim}, dtype);
    layer.w13 = at::cat({read_tensor(files, p + "mlp.gate_proj.weight", {hidden, dim}, dtype),
                         read_tensor(files, p + "mlp.up_proj.weight", {hidden, dim}, dtype)}, 0);
    layer.w2 = read_tensor(files, p + "mlp.down_proj.weight", {dim, hidden}, dtype);
    weights.layers.push_back(std::move(layer));
  }
  *config_out = c;
  return weights;
}

}  // namespace hipstudio
