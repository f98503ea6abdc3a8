#include "engine/model/convert_hf.h"

#include <filesystem>
#include <fstream>
#include <cstdlib>

#include <sys/stat.h>

#include <ATen/ATen.h>

#include "engine/formats/architectures.h"
#include "engine/formats/errors.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/remove_tree.h"
#include "engine/formats/safetensors.h"

namespace hipstudio {

namespace fs = std::filesystem;

namespace {

StoredDType safetensors_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return StoredDType::F32;
    case c10::kBFloat16: return StoredDType::BF16;
    case c10::kHalf: return StoredDType::F16;
    default: throw InputError("convert: unsupported dtype (use f32, bf16 or f16)");
  }
}

// Collects named tensors (kept alive here) and writes them in one safetensors file.
class TensorList {
 public:
  explicit TensorList(c10::ScalarType dtype) : dtype_(dtype) {}
  void add(const std::string& name, const at::Tensor& t) {
    at::Tensor owned = t.to(at::kCPU, dtype_).contiguous();
    keep_.push_back(owned);
    TensorToWrite w;
    w.name = name;
    w.dtype = safetensors_dtype(dtype_);
    w.shape.assign(owned.sizes().begin(), owned.sizes().end());
    w.data = owned.data_ptr();
    list_.push_back(std::move(w));
  }
  const std::vector<TensorToWrite>& list() const { return list_; }

 private:
  c10::ScalarType dtype_;
  std::vector<at::Tensor> keep_;
  std::vector<TensorToWrite> list_;
};

// The part of a loaded layer that one file tensor holds (fused q/k/v and gate/up split by rows).
at::Tensor layer_tensor(const LayerWeights& layer, TensorRole role, const ModelConfig& c) {
  const int64_t qd = c.q_dim(), kvd = c.kv_dim(), hidden = c.hidden_dim;
  switch (role) {
    case TensorRole::kAttnNorm: return layer.attn_norm;
    case TensorRole::kWq: return layer.wqkv.narrow(0, 0, qd);
    case TensorRole::kWk: return layer.wqkv.narrow(0, qd, kvd);
    case TensorRole::kWv: return layer.wqkv.narrow(0, qd + kvd, kvd);
    case TensorRole::kWqkv: return layer.wqkv;
    case TensorRole::kBq: return layer.bqkv.narrow(0, 0, qd);
    case TensorRole::kBk: return layer.bqkv.narrow(0, qd, kvd);
    case TensorRole::kBv: return layer.bqkv.narrow(0, qd + kvd, kvd);
    case TensorRole::kQNorm: return layer.q_norm;
    case TensorRole::kKNorm: return layer.k_norm;
    case TensorRole::kWo: return layer.wo;
    case TensorRole::kBo: return layer.bo;
    case TensorRole::kPostAttnNorm: return layer.post_attn_norm;
    case TensorRole::kMlpNorm: return layer.mlp_norm;
    case TensorRole::kWgate: return layer.w13.narrow(0, 0, hidden);
    case TensorRole::kWup: return layer.w13.narrow(0, hidden, hidden);
    case TensorRole::kWgateUp: return layer.w13;
    case TensorRole::kBgate: return layer.b13.narrow(0, 0, hidden);
    case TensorRole::kBup: return layer.b13.narrow(0, hidden, hidden);
    case TensorRole::kWdown: return layer.w2;
    case TensorRole::kBdown: return layer.b2;
    case TensorRole::kPostMlpNorm: return layer.post_mlp_norm;
  }
  return {};
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw InputError("convert: could not write " + path.string() + " (disk full or read-only?)");
}

}  // namespace

void convert_to_hf(const Model& model, c10::ScalarType dtype, const std::string& out_dir) {
  const fs::path out = fs::absolute(out_dir);
  if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out)))
    throw InputError("convert: " + out.string() + " already exists and is not an empty directory; choose a new --out");
  const fs::path parent = out.parent_path();
  if (!fs::is_directory(parent)) throw InputError("convert: the parent directory " + parent.string() + " does not exist");
  // mkdtemp gives a fresh private name (std::random_device crashes beside PyTorch's LibTorch wheels).
  std::string pattern = (parent / (".hipstudio-convert-" + out.filename().string() + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw InputError("convert: cannot create a temporary directory in " + parent.string() + " (read-only or full?)");
  const fs::path tmp = pattern;
  try {
    const ModelConfig& c = model.config;
    const ModelWeights& w = model.weights;
    TensorList tensors(dtype);
    const Architecture* found = find_architecture(c.architecture == "llama2.c" ? "LlamaForCausalLM" : c.architecture);
    if (!found)
      throw InputError("convert: architecture '" + c.architecture + "' is not supported (supported: " +
                       supported_architectures_text() + ")");
    const Architecture& arch = *found;
    // Gemma stores w where the loader keeps 1 + w (float32): unfold before writing.
    auto norm = [&](const at::Tensor& t) { return arch.norm_plus_one ? t.to(at::kFloat) - 1.0f : t; };
    tensors.add(kEmbeddingTensor, w.embedding);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      for (const LayerTensor& t : arch.layer_tensors)
        if (layer_tensor_present(t, c)) {
          const at::Tensor value = layer_tensor(w.layers[static_cast<size_t>(l)], t.role, c);
          tensors.add(p + t.name, is_norm_role(t.role) ? norm(value) : value);
        }
    }
    tensors.add(kFinalNormTensor, norm(w.final_norm));
    if (!c.tie_word_embeddings) tensors.add(kClassifierTensor, w.classifier);
    write_safetensors((tmp / "model.safetensors").string(), tensors.list(), {{"format", "pt"}});

    const std::string torch_dtype = dtype == c10::kFloat ? "float32" : dtype == c10::kBFloat16 ? "bfloat16" : "float16";
    write_text(tmp / "config.json", hf_config_json(c, torch_dtype));

    if (model.source.format == ModelFormat::Llama2c) {
      write_hf_tokenizer_from_llama2c(model.source.tokenizer, static_cast<int32_t>(c.vocab_size), tmp.string());
      fs::copy_file(model.source.tokenizer, tmp / "tokenizer.bin");
    } else {
      const fs::path src = fs::path(model.source.tokenizer).parent_path();
      for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"})
        if (fs::is_regular_file(src / name)) fs::copy_file(src / name, tmp / name);
    }
    if (fs::exists(out)) fs::remove(out);  // an empty directory, checked above
    fs::rename(tmp, out);
    // mkdtemp made the folder 0700; give it what any new folder gets (0777 less the umask).
    const mode_t umask_bits = ::umask(0);
    ::umask(umask_bits);
    fs::permissions(out, static_cast<fs::perms>(0777 & ~umask_bits));
  } catch (...) {
    remove_tree(tmp.string());
    throw;
  }
}

}  // namespace hipstudio
