#include "app/model_preflight.h"

#include <filesystem>

#include "engine/formats/errors.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/llama2c_checkpoint.h"
#include "engine/tokenizer/tokenizer_file.h"

namespace hipstudio::app {

std::vector<int32_t> ModelPreflight::encode(const std::string& text) const {
  return tokenizer ? tokenizer->encode(text, /*add_bos=*/true) : std::vector<int32_t>{};
}

std::vector<PathArg> model_input_files(const ModelOptions& options, bool require_tokenizer) {
  namespace fs = std::filesystem;
  const ModelSource source = resolve_model_source(options.model, options.tokenizer, require_tokenizer);
  std::vector<PathArg> files;
  if (source.format == ModelFormat::Llama2c) {
    files.push_back({"the model", source.checkpoint});
  } else {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(source.checkpoint, ec)) {
      const std::string name = e.path().filename().string();
      if (name == "config.json" || name.find(".safetensors") != std::string::npos) files.push_back({"the model's " + name, e.path().string()});
    }
  }
  if (!source.tokenizer.empty() && !fs::is_directory(source.tokenizer)) files.push_back({"the tokenizer", source.tokenizer});
  return files;
}

ModelPreflight preflight_model(const ModelOptions& options, bool require_tokenizer) {
  ModelPreflight p;
  p.source = resolve_model_source(options.model, options.tokenizer, require_tokenizer);
  p.config = p.source.format == ModelFormat::Llama2c
                 ? read_llama2c_layout(p.source.checkpoint).config
                 : read_hf_config((std::filesystem::path(p.source.checkpoint) / "config.json").string());
  if (!p.source.tokenizer.empty()) {
    const ModelConfig& c = p.config;
    p.tokenizer = load_tokenizer_file(p.source.tokenizer, static_cast<int32_t>(c.vocab_size),
                                      c.bos_id >= 0 ? std::optional<int32_t>(c.bos_id) : std::nullopt,
                                      c.eos_id >= 0 ? std::optional<int32_t>(c.eos_id) : std::nullopt);
  }
  p.context = options.context > 0 ? options.context : p.config.max_seq_len;
  return p;
}

void check_fits_context(const ModelPreflight& model, int64_t text_tokens, int64_t new_tokens, const std::string& what,
                        const std::string& text_option, const std::string& new_tokens_option) {
  const int64_t limit = model.context, total = text_tokens + new_tokens;
  if (total <= limit) return;
  const std::string context = "the context is " + std::to_string(limit) + " tokens" +
                              (limit == model.config.max_seq_len ? " (the model's max_seq_len)" : " (--context)");
  std::string message = "the " + what + " has " + std::to_string(text_tokens) + " tokens";
  if (!new_tokens_option.empty())
    message += " and " + new_tokens_option + " asks for " + std::to_string(new_tokens) + " more (" + std::to_string(total) +
               " in all)";
  message += ", but " + context + ": shorten the " + what + " (" + text_option + ")";
  if (!new_tokens_option.empty()) {
    message += text_tokens < limit ? ", lower " + new_tokens_option + " to at most " + std::to_string(limit - text_tokens)
                                   : ", lower " + new_tokens_option;
  }
  throw InputError(message + ", or raise --context (quality past the trained context is not guaranteed)");
}

void check_layer_index(const ModelPreflight& model, int64_t layer, const std::string& option) {
  const int64_t layers = model.config.n_layers;
  if (layer >= 0 && layer < layers) return;
  throw InputError(option + " names layer " + std::to_string(layer) + " but the model (" + model.source.display_name + ") has " +
                   std::to_string(layers) + " layers, 0.." + std::to_string(layers - 1) + ": name a layer in that range");
}

}  // namespace hipstudio::app
