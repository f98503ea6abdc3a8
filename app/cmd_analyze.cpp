// `hipstudio analyze`: the paired dense-vs-HiP run, headless, written as JSON.
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/hip_options.h"
#include "app/model_options.h"
#include "captures/analysis_json.h"
#include "captures/atomic_file.h"
#include "engine/model/paired_analysis.h"
#include "engine/offload/offload_simulator.h"

namespace hipstudio::app {

void register_analyze_command(CLI::App& root) {
  struct Args {
    ModelOptions model;
    HipOptions hip;
    std::string prompt;
    int64_t decode = 0;
    bool free_running = false;
    uint64_t seed = 1;
    std::string json_out;
    std::string page_table = "vector";
    std::string policy = "lru";
    int64_t mask_bank = 0, sparse_bank = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = root.add_subcommand("analyze", "Paired dense vs HiP run: quality, decode refreshes, offloading, latency (JSON)");
  args->model.add_to(*cmd);
  args->hip.add_model_options(*cmd);
  cmd->add_option("--prompt", args->prompt, "prompt text, or @FILE")->required();
  cmd->add_option("--decode", args->decode, "greedy decode steps after the prompt")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--free-running", args->free_running,
                "let the HiP side decode its own tokens (default: it consumes the dense side's, so steps align)");
  cmd->add_option("--seed", args->seed, "seed of the random-selection baseline")->capture_default_str();
  cmd->add_option("--json", args->json_out, "output JSON file")->required();
  cmd->add_option("--page-table", args->page_table, "offloading page table: vector or hash")
      ->check(CLI::IsMember({"vector", "hash"}))->capture_default_str();
  cmd->add_option("--policy", args->policy, "offloading eviction policy: lru or lfu")
      ->check(CLI::IsMember({"lru", "lfu"}))->capture_default_str();
  cmd->add_option("--mask-bank", args->mask_bank, "mask-estimation bank tokens per head (0: c * (k / b_sk) * log2 T)")
      ->capture_default_str();
  cmd->add_option("--sa-bank", args->sparse_bank, "sparse-attention bank tokens per head (0: k)")->capture_default_str();
  cmd->callback([args] {
    const std::string prompt = read_text_argument(args->prompt, "--prompt");
    AnalysisOptions options;
    options.hip = args->hip.model_params();
    options.decode_steps = args->decode;
    options.force_dense_tokens = !args->free_running;
    options.context_limit = args->model.context;
    options.random_seed = args->seed;
    auto model = args->model.load();
    PairedAnalysis analysis = run_paired_analysis(model, prompt, options, [](double fraction, const std::string& what) {
      std::fprintf(stderr, "\ranalyze: %3.0f%% %-40s", fraction * 100.0, what.c_str());
      return true;
    });
    std::fprintf(stderr, "\n");
    offload::OffloadConfig offload_config;
    offload_config.cache_factor = args->hip.cache_factor;
    offload_config.mask_bank_tokens = args->mask_bank;
    offload_config.sparse_bank_tokens = args->sparse_bank;
    offload_config.table = args->page_table == "hash" ? offload::PageTableKind::Hash : offload::PageTableKind::Vector;
    offload_config.policy = args->policy == "lfu" ? offload::EvictionPolicy::Lfu : offload::EvictionPolicy::Lru;
    offload_config.k = options.hip.hip.k;
    offload_config.b_sk = options.hip.hip.b_sk;
    offload_config.context_tokens = static_cast<int64_t>(analysis.prompt_ids.size()) + args->decode;
    const int64_t element = static_cast<int64_t>(c10::elementSize(model->run.dtype));
    offload_config.mask_bytes_per_token = model->config.head_dim * element;
    offload_config.sparse_bytes_per_token = 2 * model->config.head_dim * element;
    offload_config.build_access_map = false;
    const offload::OffloadResult offloading = offload::simulate_offloading(analysis.access, offload_config);

    captures::RunInfo info{HIPSTUDIO_VERSION, model->source.display_name, model->config.architecture,
                           device_description(model->run), prompt};
    captures::write_file_atomic(args->json_out, captures::analysis_to_json(analysis, info, &offloading, &offload_config).dump(1) + "\n");
    std::printf("dense ppl %.4f | HiP ppl %.4f | KL %.5f | top-1 agreement %.4f | decode steps %zu, mask refreshes %lld\n",
                analysis.dense.ppl, analysis.hip.ppl, analysis.kl, analysis.top1_agreement, analysis.decode.size(),
                static_cast<long long>(analysis.mask_refreshes));
    std::printf("latency ms (prefill): dense %.3f, HiP %.3f (mask %.3f, sparse %.3f, dense layers %.3f, other %.3f)\n",
                analysis.dense.latency.prefill.total(), analysis.hip.latency.prefill.total(),
                analysis.hip.latency.prefill.mask, analysis.hip.latency.prefill.sparse,
                analysis.hip.latency.prefill.dense, analysis.hip.latency.prefill.other);
    std::printf("offloading (%s, %s): mask bank %lld tokens: %lld accesses, hit ratio %.3f | sparse bank %lld tokens: "
                "%lld accesses, hit ratio %.3f\n",
                offload::page_table_kind_name(offload_config.table), offload::eviction_policy_name(offload_config.policy),
                static_cast<long long>(offloading.mask.bank_tokens), static_cast<long long>(offloading.mask.total.accesses),
                offload::hit_ratio(offloading.mask.total), static_cast<long long>(offloading.sparse.bank_tokens),
                static_cast<long long>(offloading.sparse.total.accesses), offload::hit_ratio(offloading.sparse.total));
    std::fprintf(stderr, "wrote %s\n", args->json_out.c_str());
  });
}

}  // namespace hipstudio::app
