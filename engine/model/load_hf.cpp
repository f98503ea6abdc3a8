// Hugging Face directory (config.json + safetensors) -> ModelWeights on the run device.
#include <sys/mman.h>
#include <unistd.h>

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

// Drops the mapped pages of [data, data + bytes) from this process's resident memory once they are
// copied: the file still backs them, so a later read faults them back in. Without it a 16 GB
// checkpoint loaded onto a GPU would stay 16 GB of host RSS for the whole load.
void release_pages(const void* data, uint64_t bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes + page - 1) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice only: a failure costs memory, not data
}

// Copies one tensor out of the mapping into a tensor of `target` dtype on `device`, checking its
// shape: straight from the mapping to the device, with no second host copy.
at::Tensor read_tensor(const SafetensorsModel& files, const std::string& name, at::IntArrayRef expected,
                       at::ScalarType target, const c10::Device& device) {
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
  if (device.is_cpu()) return type == target ? view.clone() : view.to(target);
  at::Tensor placed = view.to(device, target);
  release_pages(info.data, info.nbytes);
  return placed;
}

}  // namespace

ModelWeights load_hf_weights(const std::string& dir, at::ScalarType dtype, ModelConfig* config_out, const c10::Device& device) {
  const ModelConfig c = read_hf_config(dir + "/config.json");
  const SafetensorsModel files(dir);
  const int64_t dim = c.dim, hidden = c.hidden_dim, qd = c.q_dim(), kvd = c.kv_dim();

  ModelWeights weights;
  weights.embedding = read_tensor(files, "model.embed_tokens.weight", {c.vocab_size, dim}, dtype, device);
  weights.final_norm = read_tensor(files, "model.norm.weight", {dim}, dtype, device);
  if (c.tie_word_embeddings || !files.find("lm_head.weight")) {
    if (!c.tie_word_embeddings)
      throw InputError(dir + ": missing tensor 'lm_head.weight' and tie_word_embeddings is false in config.json");
    weights.classifier = weights.embedding;
  } else {
    weights.classifier = read_tensor(files, "lm_head.weight", {c.vocab_size, dim}, dtype, device);
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights layer;
    layer.attn_norm = read_tensor(files, p + "input_layernorm.weight", {dim}, dtype, device);
    layer.wqkv = at::cat({read_tensor(files, p + "self_attn.q_proj.weight", {qd, dim}, dtype, device),
                          read_tensor(files, p + "self_attn.k_proj.weight", {kvd, dim}, dtype, device),
                          read_tensor(files, p + "self_attn.v_proj.weight", {kvd, dim}, dtype, device)}, 0);
    if (c.attention_bias)
      layer.bqkv = at::cat({read_tensor(files, p + "self_attn.q_proj.bias", {qd}, dtype, device),
                            read_tensor(files, p + "self_attn.k_proj.bias", {kvd}, dtype, device),
                            read_tensor(files, p + "self_attn.v_proj.bias", {kvd}, dtype, device)}, 0);
    layer.wo = read_tensor(files, p + "self_attn.o_proj.weight", {dim, qd}, dtype, device);
    layer.mlp_norm = read_tensor(files, p + "post_attention_layernorm.weight", {dim}, dtype, device);
    layer.w13 = at::cat({read_tensor(files, p + "mlp.gate_proj.weight", {hidden, dim}, dtype, device),
                         read_tensor(files, p + "mlp.up_proj.weight", {hidden, dim}, dtype, device)}, 0);
    layer.w2 = read_tensor(files, p + "mlp.down_proj.weight", {dim, hidden}, dtype, device);
    weights.layers.push_back(std::move(layer));
  }
  *config_out = c;
  return weights;
}

}  // namespace hipstudio
