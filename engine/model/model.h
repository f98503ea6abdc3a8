#pragma once
// A loaded Llama-family model: config, tokenizer and weights on one device in one dtype.
// Weights are stored in the Hugging Face "rotate-half" RoPE layout whatever the source format
// (llama2.c's interleaved wq/wk rows are permuted on load), with q/k/v and gate/up fused so a decode
// step runs a few large matrix-vector products instead of many small ones.
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/formats/model_config.h"
#include "engine/formats/model_source.h"
#include "engine/runtime/device.h"
#include "engine/tokenizer/tokenizer.h"

namespace hipstudio {

struct LayerWeights {
  at::Tensor attn_norm;  // [dim] float32 (Gemma: 1 + w, folded at load)
  at::Tensor wqkv;       // [q_dim + 2*kv_dim, dim]: rows of wq, then wk, then wv
  at::Tensor bqkv;       // [q_dim + 2*kv_dim] or undefined: q/k/v biases (Qwen2, Llama's attention_bias)
  at::Tensor q_norm;     // [head_dim] float32 or undefined: RMSNorm weight on each q head (qk_norm)
  at::Tensor k_norm;     // [head_dim] float32 or undefined: the same on each k head
  at::Tensor wo;         // [dim, q_dim]
  at::Tensor bo;         // [dim] or undefined: o_proj bias (attention_out_bias)
  at::Tensor post_attn_norm;  // [dim] float32 or undefined: RMSNorm on the attention output (sandwich_norms)
  at::Tensor mlp_norm;   // [dim] float32: the pre-MLP RMSNorm
  at::Tensor w13;        // [2*hidden, dim]: rows of gate (w1), then up (w3)
  at::Tensor b13;        // [2*hidden] or undefined: gate bias then up bias (mlp_bias)
  at::Tensor w2;         // [dim, hidden]: down projection
  at::Tensor b2;         // [dim] or undefined: down bias (mlp_bias)
  at::Tensor post_mlp_norm;   // [dim] float32 or undefined: RMSNorm on the MLP output (sandwich_norms)
};

struct ModelWeights {
  at::Tensor embedding;   // [vocab, dim]
  std::vector<LayerWeights> layers;
  at::Tensor final_norm;  // [dim] float32 (Gemma: 1 + w, folded at load)
  at::Tensor classifier;  // [vocab, dim]; shares storage with embedding when tied
};

struct Model {
  ModelConfig config;
  ModelSource source;
  RunDevice run;
  std::shared_ptr<const Tokenizer> tokenizer;  // null only for a source resolved without a tokenizer
  ModelWeights weights;
};

// Loads any supported model (see resolve_model_source) onto run.device in run.dtype.
// Throws InputError for missing/corrupt files, unsupported architectures or dtypes.
std::shared_ptr<const Model> load_model(const ModelSource& source, const RunDevice& run);

// Puts loaded weights on run.device as every loader's do: the matrices (and a tied classifier) in
// run.dtype, the RMSNorm weights in float32 (RMSNorm runs in float32), all contiguous.
void place_weights(ModelWeights& weights, const RunDevice& run);

// The individual loaders: llama2.c files are float32 on the CPU (load_model moves them to the
// device); Hugging Face weights are converted to `dtype` tensor by tensor and copied from the file
// mapping straight to `device`, so a bf16 checkpoint never needs a float32 or a second host copy.
ModelWeights load_llama2c_weights(const std::string& path, ModelConfig* config_out);
ModelWeights load_hf_weights(const std::string& dir, at::ScalarType dtype, ModelConfig* config_out,
                             const c10::Device& device = c10::Device(c10::kCPU));

// llama2.c stores each head's wq/wk rows with RoPE pairs interleaved (0,1),(2,3)...; the Hugging
// Face layout pairs row i with i + head_dim/2. w: [n_heads * head_dim, in].
at::Tensor permute_interleaved_to_half(const at::Tensor& w, int64_t n_heads, int64_t head_dim);
at::Tensor permute_half_to_interleaved(const at::Tensor& w, int64_t n_heads, int64_t head_dim);

}  // namespace hipstudio
