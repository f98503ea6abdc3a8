#include "engine/model/model.h"

#include <new>

#include <ATen/ATen.h>

#include "engine/formats/errors.h"
#include "engine/tokenizer/tokenizer_file.h"

namespace hipstudio {

// Matrices go to the run dtype; norm weights stay float32 because RMSNorm runs in float32.
void place_weights(ModelWeights& w, const RunDevice& run) {
  auto matrix = [&](at::Tensor& t) {
    if (t.defined()) t = t.to(run.device, run.dtype).contiguous();
  };
  auto vector = [&](at::Tensor& t) {
    if (t.defined()) t = t.to(run.device, at::kFloat).contiguous();
  };
  const bool tied = w.classifier.is_same(w.embedding);
  matrix(w.embedding);
  if (tied) w.classifier = w.embedding;
  else matrix(w.classifier);
  vector(w.final_norm);
  for (LayerWeights& l : w.layers) {
    vector(l.attn_norm);
    matrix(l.wqkv);
    matrix(l.bqkv);
    vector(l.q_norm);
    vector(l.k_norm);
    matrix(l.wo);
    matrix(l.bo);
    vector(l.post_attn_norm);
    vector(l.mlp_norm);
    matrix(l.w13);
    matrix(l.b13);
    matrix(l.w2);
    matrix(l.b2);
    vector(l.post_mlp_norm);
  }
}

std::shared_ptr<const Model> load_model(const ModelSource& source, const RunDevice& run) {
  auto model = std::make_shared<Model>();
  model->source = source;
  model->run = run;
  try {
    if (source.format == ModelFormat::Llama2c) model->weights = load_llama2c_weights(source.checkpoint, &model->config);
    else model->weights = load_hf_weights(source.checkpoint, run.dtype, &model->config, run.device);
    const ModelConfig& c = model->config;
    // The file says which tokenizer it is (a llama2.c model may come with tokenizer.json, an HF one with tokenizer.bin).
    if (!source.tokenizer.empty())
      model->tokenizer = load_tokenizer_file(source.tokenizer, static_cast<int32_t>(c.vocab_size),
                                             c.bos_id >= 0 ? std::optional<int32_t>(c.bos_id) : std::nullopt,
                                             c.eos_id >= 0 ? std::optional<int32_t>(c.eos_id) : std::nullopt);
    if (model->tokenizer && model->tokenizer->vocab_size() > model->config.vocab_size)
      throw InputError(source.tokenizer + ": the tokenizer has " + std::to_string(model->tokenizer->vocab_size()) +
                       " tokens but the model's vocabulary has only " + std::to_string(model->config.vocab_size) +
                       "; tokenizer and model do not belong together");
    place_weights(model->weights, run);
  } catch (const c10::Error& e) {
    // Allocation failures and device errors surface here (for example a GPU out of memory).
    throw InputError("loading " + source.display_name + " onto " + device_description(run) +
                     " failed: " + e.what_without_backtrace() +
                     " (try --device cpu, a smaller --dtype, or a smaller model)");
  } catch (const std::bad_alloc&) {
    // Host memory: the weights (or a tokenizer) did not fit; the partly built model is freed on unwind.
    throw InputError("loading " + source.display_name + " ran out of host memory: close other programs, load a smaller "
                     "model, or a smaller --dtype (bf16 halves float32 weights)");
  }
  return model;
}

}  // namespace hipstudio
