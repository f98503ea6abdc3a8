// `hipstudio analyze`: the paired dense-vs-HiP run, headless, written as JSON; with --methods, the
// comparison of selection methods at HiP's budget (engine/analysis/method_comparison.h).
#include <cstdio>
#include <functional>
#include <memory>

#include "app/commands.h"
#include "app/progress_line.h"
#include "app/analysis_options.h"
#include "app/analyze_sweep.h"
#include "app/cli_options.h"
#include "app/cli_paths.h"
#include "app/method_options.h"
#include "app/method_table.h"
#include "app/model_preflight.h"
#include "captures/analysis_json.h"
#include "captures/atomic_file.h"
#include "captures/methods_json.h"
#include "engine/formats/errors.h"
#include "engine/analysis/method_comparison.h"
#include "engine/analysis/paired_analysis.h"
#include "engine/offload/offload_simulator.h"

namespace hipstudio::app {

void register_analyze_command(CLI::App& root) {
  struct Args {
    ModelOptions model;
    AnalysisCliOptions run;
    std::string prompt;
    std::string json_out;
    std::string sweep, sweep_out;
    int64_t sweep_layer = -1;
    MethodOptions methods;
    bool quiet = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = root.add_subcommand("analyze", "Paired dense vs HiP run: quality, decode refreshes, offloading, latency (JSON)");
  add_model_options(*cmd, args->model);
  args->run.add_to(*cmd);
  cmd->add_option("--prompt", args->prompt, "prompt text, or @FILE")->required();
  cmd->add_option("--json", args->json_out, "output JSON file")->required();
  cmd->add_option("--sweep", args->sweep,
                  "NAME=V1,V2,...: the run for each value of one of k, b_k, b_q, l_d, r_m against one dense prefill; "
                  "a table on stdout, sweep_NAME.csv and an SVG per metric, the JSON at --json");
  cmd->add_option("--sweep-out", args->sweep_out, "folder of the sweep's CSV and SVG files (default: the folder of --json)");
  CLI::Option* sweep_layer_option =
      add_number(*cmd, "--sweep-layer", args->sweep_layer,
                 "L: the sweep's recall, mass and output error of layer L alone, whose views are the only ones "
                 "computed (seconds a value at 32k tokens instead of a view of every layer); default: means over "
                 "every HiP layer. KL and latency are the whole model's either way",
                 int64_t{0}, int64_t{65535});
  // random's seed is --seed (the views' random baseline draws with it too); every other method's
  // parameter is a flag of its own.
  args->methods.add_options(*cmd, "hip", {"random"});
  CLI::Option* methods_option = cmd->get_option("--methods");
  add_quiet_flag(*cmd, args->quiet);
  cmd->callback([args, methods_option, sweep_layer_option] {
    const bool comparing = methods_option->count() > 0;
    if (comparing && !args->sweep.empty())
      throw InputError("--sweep varies HiP's parameters and --methods compares methods at one setting: give one of them");
    if (!args->sweep_out.empty() && args->sweep.empty())
      throw InputError("--sweep-out names where a sweep's files go: give --sweep NAME=V1,V2,... too, or leave it out");
    if (sweep_layer_option->count() > 0 && args->sweep.empty())
      throw InputError("--sweep-layer picks the layer a sweep measures: give --sweep NAME=V1,V2,... too, or leave it out");
    // Everything that can be checked without the weights is, so no refusal comes at 100%.
    CommandPaths paths;
    paths.output_files.push_back({"--json", args->json_out});
    add_text_input(paths, "--prompt", args->prompt);
    for (const PathArg& f : model_input_files(args->model)) paths.input_files.push_back(f);
    // The field's name is all the file names need; its values are checked once the config is read.
    if (!args->sweep.empty())
      add_sweep_paths(paths, args->sweep_out, args->json_out,
                      sweep_field_by_name(args->sweep.substr(0, args->sweep.find('='))), args->model.device);
    check_command_paths(paths);
    const std::string prompt = read_text_argument(args->prompt, "--prompt");
    AnalysisOptions options = args->run.analysis(args->model.context);
    options.keep_all_layers = false;  // the per-head numbers need no Q/K/V or masks on the host
    const ModelPreflight preflight = preflight_model(args->model);
    args->run.hip.check_dense_layers(preflight.config);
    check_fits_context(preflight, static_cast<int64_t>(preflight.encode(prompt).size()), args->run.decode, "prompt",
                       "--prompt", "--decode");
    std::vector<hip::methods::MethodChoice> methods;
    if (comparing) methods = method_choices(args->methods, options);
    const bool sweeping = !args->sweep.empty();
    SweepSpec sweep = sweeping ? parse_sweep(args->sweep, args->run.hip, preflight.config) : SweepSpec{};
    if (sweep_layer_option->count() > 0) {
      if (args->sweep_layer < 0 || args->sweep_layer >= preflight.config.n_layers)
        throw InputError("--sweep-layer " + std::to_string(args->sweep_layer) + " is outside the model's " +
                         std::to_string(preflight.config.n_layers) + " layers: give 0 to " +
                         std::to_string(preflight.config.n_layers - 1));
      sweep.views_layer = args->sweep_layer;
    }
    ProgressLine progress("analyze", args->quiet);
    progress(0.0, "loading the model");
    auto model = args->model.load();
    if (sweeping) {
      const SweepResult result = run_sweep(model, prompt, options, sweep, std::ref(progress));
      progress.finish();
      write_sweep_outputs(result, *model, options, sweep_folder(args->sweep_out, args->json_out), args->json_out);
      return;
    }
    if (comparing) {
      const std::vector<MethodRun> runs = run_method_comparison(model, prompt, options, methods, std::ref(progress));
      progress(1.0, "writing " + args->json_out);
      const captures::RunInfo info{HIPSTUDIO_VERSION, model->source.display_name, model->config.architecture,
                                   device_description(model->run), prompt};
      const nlohmann::json json = captures::methods_to_json(runs, info);
      captures::write_file_atomic(args->json_out, json.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      progress.finish();
      print_method_table(stdout, runs);
      std::fprintf(stderr, "wrote %s\n", args->json_out.c_str());
      return;
    }
    PairedAnalysis analysis = run_paired_analysis(model, prompt, options, std::ref(progress));
    progress(1.0, "offloading simulation");
    offload::OffloadConfig offload_config = args->run.offload(analysis, *model);
    offload_config.build_access_map = false;  // the JSON has counts, not the map
    const offload::OffloadResult offloading = offload::simulate_offloading(analysis.access, offload_config);
    progress(1.0, "writing " + args->json_out);

    captures::RunInfo info{HIPSTUDIO_VERSION, model->source.display_name, model->config.architecture,
                           device_description(model->run), prompt};
    // A prompt that is not valid UTF-8 (binary bytes) is written with U+FFFD in "text"; its tokens keep the exact bytes.
    const nlohmann::json json = captures::analysis_to_json(analysis, info, &offloading, &offload_config);
    captures::write_file_atomic(args->json_out, json.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    progress(1.0, "done");
    progress.finish();
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
