#include "app/common/model_options.h"

#include <cstdio>
#include <thread>

#include <ATen/Parallel.h>

namespace hipstudio::app {

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

std::shared_ptr<const Model> ModelOptions::load(bool require_tokenizer) const {
  // Matrix products, the bulk of the work, run on OpenBLAS's (or the GPU's) own threads. LibTorch's
  // OpenMP workers only speed up small element-wise ops and, busy-waiting beside OpenBLAS, halve
  // CPU decode speed on a 2-core machine (measured: 165 vs 310 tok/s for stories15M). So the
  // default is one thread; --threads N sets them explicitly, 0 all cores.
  at::set_num_threads(resolve_threads(threads));
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

}  // namespace hipstudio::app
