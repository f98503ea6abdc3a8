#include "app/model_options.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <ATen/Parallel.h>

#include "engine/formats/errors.h"

namespace hipstudio::app {

void ModelOptions::add_to(CLI::App& command) {
  command.add_option("--model", model,
                     "llama2.c checkpoint file or Hugging Face model directory (default: stories15M from the cache)");
  command.add_option("--tokenizer", tokenizer, "tokenizer file (default: tokenizer.bin / tokenizer.json beside the model)");
  command.add_option("--device", device, "cpu or cuda[:N]")->capture_default_str();
  command.add_option("--dtype", dtype, "f32, bf16 or f16 (f16 only on cuda)")->capture_default_str();
  command.add_option("--threads", threads, "LibTorch intra-op threads (0 = 1: matrix products use all cores through BLAS)")->check(CLI::NonNegativeNumber);
  command.add_option("--context", context, "maximum tokens per sequence (default: the model's context length)")
      ->check(CLI::NonNegativeNumber);
}

std::shared_ptr<const Model> ModelOptions::load(bool require_tokenizer) const {
  // Matrix products, the bulk of the work, run on OpenBLAS's (or the GPU's) own threads. LibTorch's
  // OpenMP workers only speed up small element-wise ops and, busy-waiting beside OpenBLAS, halve
  // CPU decode speed on a 2-core machine (measured: 165 vs 310 tok/s for stories15M). So they
  // default to one thread; --threads N sets them explicitly.
  at::set_num_threads(threads > 0 ? threads : 1);
  const RunDevice run = parse_run_device(device, dtype);
  const ModelSource source = resolve_model_source(model, tokenizer, require_tokenizer);
  auto loaded = load_model(source, run);
  const ModelConfig& c = loaded->config;
  std::fprintf(stderr, "model: %s (%s, %lld layers, %lld heads / %lld kv heads, dim %lld, vocab %lld, context %lld) on %s\n",
               source.display_name.c_str(), c.architecture.c_str(), static_cast<long long>(c.n_layers),
               static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.dim),
               static_cast<long long>(c.vocab_size), static_cast<long long>(c.max_seq_len),
               device_description(run).c_str());
  return loaded;
}

std::string read_text_argument(const std::string& value, const std::string& option_name) {
  if (value.rfind("@@", 0) == 0) return value.substr(1);
  if (value.rfind('@', 0) != 0) return value;
  const std::string path = value.substr(1);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(option_name + " @" + path + ": cannot open the file (check the path)");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace hipstudio::app
