#include "engine/model/convert_hf.h"

#include <filesystem>
#include <fstream>
#include <cstdlib>

#include <sys/stat.h>

#include <ATen/ATen.h>

#include "engine/formats/errors.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/remove_tree.h"
#include "engine/formats/safetensors.h"

namespace hipstudio {

namespace fs = std::filesystem;

namespace {

DType safetensors_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return DType::F32;
    case c10::kBFloat16: return DType::BF16;
    case c10::kHalf: return DType::F16;
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
    tensors.add("model.embed_tokens.weight", w.embedding);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const LayerWeights& layer = w.layers[l];
      const std::string p = "model.layers." + std::to_string(l) + ".";
      const int64_t qd = c.q_dim(), kvd = c.kv_dim();
      tensors.add(p + "input_layernorm.weight", layer.attn_norm);
      tensors.add(p + "self_attn.q_proj.weight", layer.wqkv.narrow(0, 0, qd));
      tensors.add(p + "self_attn.k_proj.weight", layer.wqkv.narrow(0, qd, kvd));
      tensors.add(p + "self_attn.v_proj.weight", layer.wqkv.narrow(0, qd + kvd, kvd));
      if (layer.bqkv.defined()) {
        tensors.add(p + "self_attn.q_proj.bias", layer.bqkv.narrow(0, 0, qd));
        tensors.add(p + "self_attn.k_proj.bias", layer.bqkv.narrow(0, qd, kvd));
        tensors.add(p + "self_attn.v_proj.bias", layer.bqkv.narrow(0, qd + kvd, kvd));
      }
      tensors.add(p + "self_attn.o_proj.weight", layer.wo);
      tensors.add(p + "post_attention_layernorm.weight", layer.mlp_norm);
      tensors.add(p + "mlp.gate_proj.weight", layer.w13.narrow(0, 0, c.hidden_dim));
      tensors.add(p + "mlp.up_proj.weight", layer.w13.narrow(0, c.hidden_dim, c.hidden_dim));
      tensors.add(p + "mlp.down_proj.weight", layer.w2);
    }
    tensors.add("model.norm.weight", w.final_norm);
    if (!c.tie_word_embeddings) tensors.add("lm_head.weight", w.classifier);
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
