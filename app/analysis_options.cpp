#include "app/analysis_options.h"

#include <c10/core/ScalarType.h>

#include "app/cli_options.h"

namespace hipstudio::app {

void AnalysisCliOptions::add_to(CLI::App& cmd) {
  hip.add_model_options(cmd);
  // The context bounds the steps for real (checked against the model before it loads); this bound only
  // keeps the number sane.
  add_number(cmd, "--decode", decode, "greedy decode steps after the prompt", int64_t{0}, int64_t{1} << 20);
  cmd.add_flag("--free-running", free_running,
               "let the HiP side decode its own tokens (default: it consumes the dense side's, so steps align)");
  add_number(cmd, "--seed", seed, "seed of the random-selection baseline", uint64_t{0});
  add_choice(cmd, "--page-table", page_table, "offloading page table: vector or hash", {"vector", "hash"});
  add_choice(cmd, "--policy", policy, "offloading eviction policy: lru or lfu", {"lru", "lfu"});
  add_number(cmd, "--mask-bank", mask_bank, "mask-estimation bank tokens per head (0: c * (k / b_sk) * log2 T)", int64_t{0},
             int64_t{1} << 24);
  add_number(cmd, "--sa-bank", sparse_bank, "sparse-attention bank tokens per head (0: k)", int64_t{0}, int64_t{1} << 24);
}

AnalysisOptions AnalysisCliOptions::analysis(int64_t context_limit) const {
  AnalysisOptions options;
  options.hip = hip.model_params();
  options.decode_steps = decode;
  options.force_dense_tokens = !free_running;
  options.context_limit = context_limit;
  options.random_seed = seed;
  return options;
}

offload::OffloadConfig AnalysisCliOptions::offload(const PairedAnalysis& analysis, const Model& model) const {
  offload::OffloadConfig config;
  config.cache_factor = hip.cache_factor;
  config.mask_bank_tokens = mask_bank;
  config.sparse_bank_tokens = sparse_bank;
  config.table = page_table == "hash" ? offload::PageTableKind::Hash : offload::PageTableKind::Vector;
  config.policy = policy == "lfu" ? offload::EvictionPolicy::Lfu : offload::EvictionPolicy::Lru;
  config.k = analysis.options.hip.hip.k;
  config.b_sk = analysis.options.hip.hip.b_sk;
  config.context_tokens = static_cast<int64_t>(analysis.prompt_ids.size()) + analysis.options.decode_steps;
  const int64_t element = static_cast<int64_t>(c10::elementSize(model.run.dtype));
  config.mask_bytes_per_token = model.config.head_dim * element;
  config.sparse_bytes_per_token = 2 * model.config.head_dim * element;
  return config;
}

}  // namespace hipstudio::app
