// Hugging Face directory (config.json + safetensors) -> ModelWeights on the run device.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>

#include <ATen/ATen.h>

#include "engine/formats/architectures.h"
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
    case StoredDType::F32: type = at::kFloat; break;
    case StoredDType::F16: type = at::kHalf; break;
    case StoredDType::BF16: type = at::kBFloat16; break;
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

// The file of a tensor (the shard that holds it), for messages.
std::string file_of(const SafetensorsModel& files, const std::string& name) {
  const TensorInfo* info = files.find(name);
  for (const SafetensorsFile& shard : files.shards())
    if (shard.find(name) == info) return shard.path();
  return files.dir();
}

// The layer index of a name "model.layers.<l>.<rest>", or -1.
int64_t layer_of(const std::string& name) {
  static const std::string prefix = "model.layers.";
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  size_t end = prefix.size();
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == prefix.size() || end >= name.size() || name[end] != '.' || end - prefix.size() > 6) return -1;
  return std::stoll(name.substr(prefix.size(), end - prefix.size()));
}

// Every tensor in the files must be one the architecture table expects for this config, and every
// expected one must be there: an extra tensor (q_norm under a Llama, an o_proj bias the config
// does not switch on, a layer past num_hidden_layers) is refused, never dropped.
void check_tensor_names(const SafetensorsModel& files, const Architecture& a, const ModelConfig& c) {
  std::set<std::string> expected = {kEmbeddingTensor, kFinalNormTensor};
  if (!c.tie_word_embeddings) expected.insert(kClassifierTensor);
  for (int64_t l = 0; l < c.n_layers; ++l)
    for (const LayerTensor& t : a.layer_tensors)
      if (layer_tensor_present(t, c)) expected.insert("model.layers." + std::to_string(l) + "." + t.name);
  int64_t highest_layer = -1;
  for (const std::string& name : files.names()) {
    const int64_t layer = layer_of(name);
    highest_layer = std::max(highest_layer, layer);
    if (expected.count(name)) continue;
    // Buffers some older exports saved beside the weights: recomputed from config.json, not weights.
    if (name.find("rotary_emb.inv_freq") != std::string::npos) continue;
    if (name == kClassifierTensor) continue;  // tied: checked against the embedding when loading
    if (layer >= c.n_layers)
      throw InputError(files.dir() + ": the weights hold layer " + std::to_string(layer) + " (tensor '" + name +
                       "') but config.json says num_hidden_layers " + std::to_string(c.n_layers) +
                       "; config.json does not match the weights");
    throw InputError(file_of(files, name) + ": tensor '" + name + "' is not used by " + c.architecture +
                     " with this config.json (HiP Studio refuses rather than ignore weights); the checkpoint is of "
                     "another architecture, or config.json lacks the switch that uses it (attention_bias, mlp_bias)");
  }
  for (const std::string& name : expected) {
    if (files.find(name)) continue;
    const int64_t layer = layer_of(name);
    if (layer > highest_layer)
      throw InputError(files.dir() + ": config.json says num_hidden_layers " + std::to_string(c.n_layers) +
                       " but the weights hold " + std::to_string(highest_layer + 1) +
                       " layers; config.json does not match the weights");
    if (name == kClassifierTensor)
      throw InputError(files.dir() + ": missing tensor '" + name + "' and tie_word_embeddings is false in config.json");
    throw InputError(files.dir() + ": missing tensor '" + name + "', which " + c.architecture +
                     " with this config.json needs; the weights are incomplete or of another architecture");
  }
}

// Collects one on-device "all finite" flag per weight and checks them with a single host sync at
// the end of the load; only when one fails is its tensor searched (again from the file, on the CPU)
// for the first bad element, so a good load costs one fused reduction per tensor.
class FiniteCheck {
 public:
  void add(const std::string& name, const at::Tensor& t) {
    flags_.push_back(at::isfinite(t).all());
    names_.push_back(name);
  }
  void finish(const SafetensorsModel& files, at::ScalarType dtype) const {
    if (flags_.empty() || at::stack(flags_).all().item<bool>()) return;
    for (size_t i = 0; i < flags_.size(); ++i) {
      if (flags_[i].item<bool>()) continue;
      const std::string& name = names_[i];
      const TensorInfo& info = files.get(name);
      const at::Tensor stored = at::from_blob(const_cast<void*>(info.data), {info.numel()},
                                              at::TensorOptions().dtype(stored_type(info.dtype)));
      const at::Tensor bad_in_file = (~at::isfinite(stored)).nonzero();
      if (bad_in_file.size(0) > 0)
        throw InputError(file_of(files, name) + ": tensor '" + name + "' holds a non-finite value (NaN or Inf) at flat index " +
                         std::to_string(bad_in_file[0][0].item<int64_t>()) +
                         "; the checkpoint is corrupt: download or convert it again");
      const at::Tensor bad = (~at::isfinite(stored.to(dtype))).nonzero();
      const int64_t index = bad.size(0) > 0 ? bad[0][0].item<int64_t>() : 0;
      throw InputError(file_of(files, name) + ": tensor '" + name + "' at flat index " + std::to_string(index) +
                       " does not fit in " + c10::toString(dtype) + " (it becomes Inf); run with a wider --dtype (bf16 or f32)");
    }
  }

 private:
  static at::ScalarType stored_type(StoredDType d) {
    return d == StoredDType::F16 ? at::kHalf : d == StoredDType::BF16 ? at::kBFloat16 : at::kFloat;
  }
  std::vector<at::Tensor> flags_;
  std::vector<std::string> names_;
};

}  // namespace

ModelWeights load_hf_weights(const std::string& dir, at::ScalarType dtype, ModelConfig* config_out, const c10::Device& device) {
  const ModelConfig c = read_hf_config(dir + "/config.json");
  const Architecture& a = *find_architecture(c.architecture);  // read_hf_config refuses any other
  const SafetensorsModel files(dir);
  check_tensor_names(files, a, c);
  FiniteCheck finite;
  auto read = [&](const std::string& name, const std::vector<int64_t>& shape) {
    at::Tensor t = read_tensor(files, name, shape, dtype, device);
    finite.add(name, t);
    return t;
  };
  // Gemma's RMSNorm multiplies by (1 + w), computed in float32 from the run-dtype weight as
  // transformers does; folded here so every RMSNorm in the forward pass is x * rsqrt(...) * w.
  auto norm = [&](const std::string& name, int64_t size) {
    at::Tensor w = read(name, {size});
    return a.norm_plus_one ? w.to(at::kFloat) + 1.0f : w;
  };

  ModelWeights weights;
  weights.embedding = read(kEmbeddingTensor, {c.vocab_size, c.dim});
  weights.final_norm = norm(kFinalNormTensor, c.dim);
  if (c.tie_word_embeddings) {
    if (const TensorInfo* head = files.find(kClassifierTensor)) {
      // A tied checkpoint may carry the copy; it must be the embedding, or which one is meant is unclear.
      const TensorInfo& emb = files.get(kEmbeddingTensor);
      if (head->dtype != emb.dtype || head->shape != emb.shape || std::memcmp(head->data, emb.data, emb.nbytes) != 0)
        throw InputError(file_of(files, kClassifierTensor) + ": tensor 'lm_head.weight' differs from '" +
                         kEmbeddingTensor + "' but tie_word_embeddings is true (or absent, and " + c.architecture +
                         " ties by default); set tie_word_embeddings to false in config.json to use it");
    }
    weights.classifier = weights.embedding;
  } else {
    weights.classifier = read(kClassifierTensor, {c.vocab_size, c.dim});
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::map<TensorRole, at::Tensor> t;
    for (const LayerTensor& lt : a.layer_tensors) {
      if (!layer_tensor_present(lt, c)) continue;
      const std::vector<int64_t> shape = layer_tensor_shape(lt.role, c);
      t[lt.role] = is_norm_role(lt.role) ? norm(p + lt.name, shape[0]) : read(p + lt.name, shape);
    }
    auto get = [&](TensorRole r) { return t.count(r) ? t[r] : at::Tensor(); };
    LayerWeights layer;
    layer.attn_norm = get(TensorRole::kAttnNorm);
    layer.wqkv = t.count(TensorRole::kWqkv) ? t[TensorRole::kWqkv]
                                            : at::cat({t[TensorRole::kWq], t[TensorRole::kWk], t[TensorRole::kWv]}, 0);
    if (c.attention_bias) layer.bqkv = at::cat({t[TensorRole::kBq], t[TensorRole::kBk], t[TensorRole::kBv]}, 0);
    layer.q_norm = get(TensorRole::kQNorm);
    layer.k_norm = get(TensorRole::kKNorm);
    layer.wo = get(TensorRole::kWo);
    layer.bo = get(TensorRole::kBo);
    layer.post_attn_norm = get(TensorRole::kPostAttnNorm);
    layer.mlp_norm = get(TensorRole::kMlpNorm);
    layer.w13 = t.count(TensorRole::kWgateUp) ? t[TensorRole::kWgateUp]
                                              : at::cat({t[TensorRole::kWgate], t[TensorRole::kWup]}, 0);
    if (c.mlp_bias) layer.b13 = at::cat({t[TensorRole::kBgate], t[TensorRole::kBup]}, 0);
    layer.w2 = get(TensorRole::kWdown);
    layer.b2 = get(TensorRole::kBdown);
    layer.post_mlp_norm = get(TensorRole::kPostMlpNorm);
    weights.layers.push_back(std::move(layer));
  }
  finite.finish(files, dtype);
  *config_out = c;
  return weights;
}

}  // namespace hipstudio
