// `hipstudio bench generate`: prefill and decode throughput of the chosen model on the chosen device.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "app/commands.h"
#include "app/cli_options.h"
#include "app/model_preflight.h"
#include "engine/generation/generation.h"

namespace hipstudio::app {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

void register_bench_generate(CLI::App& bench) {
  struct Args {
    ModelOptions model;
    std::string prompt = "Once upon a time";
    int64_t tokens = 256;
    int repeats = 3;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = bench.add_subcommand("generate", "Prefill and decode tokens/s (greedy; median of repeats after a warm-up)");
  add_model_options(*cmd, args->model);
  cmd->add_option("--prompt", args->prompt, "prompt text, or @FILE")->capture_default_str();
  add_number(*cmd, "--tokens", args->tokens, "decode steps per run (the prompt plus these must fit the context)", int64_t{1}, int64_t{1} << 24);
  add_number(*cmd, "--repeats", args->repeats, "timed runs", 1, 10000);
  cmd->callback([args] {
    const std::string prompt = read_text_argument(args->prompt, "--prompt");
    const ModelPreflight preflight = preflight_model(args->model);
    // The prompt and every decode step must fit the context: a run that could not decode all --tokens
    // is refused with the most that fits, never measured on fewer tokens than asked.
    check_fits_context(preflight, static_cast<int64_t>(preflight.encode(prompt).size()), args->tokens, "prompt", "--prompt",
                       "--tokens");
    auto model = args->model.load();
    const int64_t prompt_tokens = static_cast<int64_t>(model->tokenizer->encode(prompt, true).size());
    GenerationOptions options;
    options.stop_at_eos = false;  // a fixed number of steps per run
    options.max_new_tokens = args->tokens;
    options.context_limit = args->model.context;
    DenseAttention dense;
    generate(model, prompt, options, dense);  // warm-up: allocator, thread pool, caches
    std::vector<double> prefill, decode;
    int64_t decoded = 0;
    for (int r = 0; r < args->repeats; ++r) {
      GenerationResult result = generate(model, prompt, options, dense);
      decoded = static_cast<int64_t>(result.generated_ids.size());
      prefill.push_back(static_cast<double>(result.prompt_ids.size()) / result.prefill_seconds);
      // The first generated token comes from the prefill logits: decode runs decoded - 1 forwards.
      decode.push_back(static_cast<double>(decoded) / result.decode_seconds);
    }
    std::printf("bench generate: %s, %s, greedy, median of %d runs\n", model->source.display_name.c_str(),
                device_description(model->run).c_str(), args->repeats);
    std::printf("%-8s %8s %12s\n", "phase", "tokens", "tokens/s");
    std::printf("%-8s %8lld %12.1f\n", "prefill", static_cast<long long>(prompt_tokens), median(prefill));
    std::printf("%-8s %8lld %12.1f\n", "decode", static_cast<long long>(decoded), median(decode));
  });
}

}  // namespace hipstudio::app
