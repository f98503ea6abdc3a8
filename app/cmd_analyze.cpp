// `hipstudio analyze`: the paired dense-vs-HiP run, headless, written as JSON.
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/hip_options.h"
#include "app/model_options.h"
#include "captures/analysis_json.h"
#include "captures/atomic_file.h"
#include "engine/model/paired_analysis.h"

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
    captures::RunInfo info{HIPSTUDIO_VERSION, model->source.display_name, model->config.architecture,
                           device_description(model->run), prompt};
    captures::write_file_atomic(args->json_out, captures::analysis_to_json(analysis, info).dump(1) + "\n");
    std::printf("dense ppl %.4f | HiP ppl %.4f | KL %.5f | top-1 agreement %.4f | decode steps %zu, mask refreshes %lld\n",
                analysis.dense.ppl, analysis.hip.ppl, analysis.kl, analysis.top1_agreement, analysis.decode.size(),
                static_cast<long long>(analysis.mask_refreshes));
    std::printf("latency ms (prefill): dense %.3f, HiP %.3f (mask %.3f, sparse %.3f, dense layers %.3f, other %.3f)\n",
                analysis.dense.latency.prefill.total(), analysis.hip.latency.prefill.total(),
                analysis.hip.latency.prefill.mask, analysis.hip.latency.prefill.sparse,
                analysis.hip.latency.prefill.dense, analysis.hip.latency.prefill.other);
    std::fprintf(stderr, "wrote %s\n", args->json_out.c_str());
  });
}

}  // namespace hipstudio::app
