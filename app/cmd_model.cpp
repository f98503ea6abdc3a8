// generate, ppl, convert and bench generate: the commands that run a language model.
#include <cstdio>
#include <filesystem>
#include <memory>

#include <ATen/Parallel.h>

#include "app/cli_options.h"
#include "app/cli_paths.h"
#include "app/commands.h"
#include "app/hip_options.h"
#include "app/model_preflight.h"
#include "engine/formats/errors.h"
#include "engine/generation/batch_generation.h"
#include "engine/model/convert_hf.h"
#include "engine/generation/generation.h"
#include "engine/backends/hip_attention.h"

namespace hipstudio::app {

namespace {

// generate --batch N (N > 1): nothing streams (the N texts grow together); each sequence's prompt
// and completion come out once the run ends, under a "[sequence i]" line.
void generate_batch_and_print(std::shared_ptr<const Model> model, const std::string& prompt, const GenerationOptions& options,
                              int64_t batch, const HipModelParams* hip_params) {
  DenseAttention dense;  // no per-sequence state: one object serves every sequence
  std::vector<std::unique_ptr<HipAttention>> hips;  // one per sequence: each keeps its own decode masks
  std::vector<AttentionBackend*> attention;
  for (int64_t i = 0; i < batch; ++i) {
    if (hip_params) hips.push_back(std::make_unique<HipAttention>(*hip_params, model->config.n_layers));
    attention.push_back(hip_params ? static_cast<AttentionBackend*>(hips.back().get()) : &dense);
  }
  const BatchGenerationResult r = generate_batch(model, prompt, options, attention);
  size_t generated = 0;
  for (size_t i = 0; i < r.completions.size(); ++i) {
    std::printf("[sequence %zu]\n", i);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);  // every byte, NULs included
    std::fwrite(r.completions[i].data(), 1, r.completions[i].size(), stdout);
    std::fputs("\n", stdout);
    generated += r.generated_ids[i].size();
  }
  if (!hips.empty()) std::fprintf(stderr, "attention: %s\n", hips.front()->backend_note().c_str());
  const double prompts = static_cast<double>(r.prompt_ids.size()) * static_cast<double>(batch);
  std::fprintf(stderr, "batch: %lld sequences; prompts: %zu tokens x %lld, prefilled one by one in %.3f s (%.1f tok/s); "
               "generated: %zu tokens in all, decoded together in %.3f s (%.1f tok/s; %lld batched steps from CUDA graphs)\n",
               static_cast<long long>(batch), r.prompt_ids.size(), static_cast<long long>(batch), r.prefill_seconds,
               prompts / std::max(r.prefill_seconds, 1e-9), generated, r.decode_seconds,
               static_cast<double>(generated) / std::max(r.decode_seconds, 1e-9), static_cast<long long>(r.graphed_steps));
}

void register_generate(CLI::App& root) {
  struct Args {
    ModelOptions model;
    HipOptions hip;
    std::string attention = "dense";
    std::string prompt;
    int64_t max_tokens = 64;
    int64_t batch = 1;
    SamplingOptions sampling;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = root.add_subcommand("generate", "Continue a prompt: the prompt and continuation on stdout, tokens/s on stderr");
  add_model_options(*cmd, args->model);
  add_choice(*cmd, "--attention", args->attention, "dense, or hip (with the HiP options below)", {"dense", "hip"});
  args->hip.add_model_options(*cmd);
  cmd->add_option("--prompt", args->prompt, "prompt text, or @FILE")->required();
  // The context bounds the tokens for real (checked before the model loads); this bound keeps the number sane.
  add_number(*cmd, "--max-tokens", args->max_tokens, "tokens to generate", int64_t{0}, int64_t{1} << 24);
  add_number(*cmd, "--temperature", args->sampling.temperature, "0 = greedy", 0.0, 100.0);
  add_number(*cmd, "--top-p", args->sampling.top_p, "nucleus sampling mass (with --temperature > 0)", 1e-6, 1.0);
  add_number(*cmd, "--seed", args->sampling.seed, "sampling seed (sequence i of a batch: seed + i)",
             decltype(args->sampling.seed){0});
  add_number(*cmd, "--batch", args->batch,
             "sequences of the prompt decoded together, each its own KV cache; each completion printed labelled",
             int64_t{1}, kMaxBatch);
  cmd->callback([args] {
    const std::string prompt = read_text_argument(args->prompt, "--prompt");
    validate_sampling(args->sampling);
    const bool use_hip = args->attention == "hip";
    const HipModelParams hip_params = use_hip ? args->hip.model_params() : HipModelParams{};
    const ModelPreflight preflight = preflight_model(args->model);
    check_fits_context(preflight, static_cast<int64_t>(preflight.encode(prompt).size()), args->max_tokens, "prompt",
                       "--prompt", "--max-tokens");
    if (use_hip) args->hip.check_dense_layers(preflight.config);
    auto model = args->model.load();
    GenerationOptions options;
    options.max_new_tokens = args->max_tokens;
    options.sampling = args->sampling;
    options.context_limit = args->model.context;
    if (args->batch > 1) {
      generate_batch_and_print(model, prompt, options, args->batch, use_hip ? &hip_params : nullptr);
      return;
    }
    DenseAttention dense;
    std::unique_ptr<HipAttention> hip;
    if (use_hip) hip = std::make_unique<HipAttention>(hip_params, model->config.n_layers);
    AttentionBackend& attention = use_hip ? static_cast<AttentionBackend&>(*hip) : dense;
    // The prompt is echoed once the run has been accepted (context and memory checked), so a refused
    // prompt is not printed in full before its error.
    bool echoed = false;
    const auto echo_prompt = [&] {
      if (echoed) return;
      echoed = true;
      std::fwrite(prompt.data(), 1, prompt.size(), stdout);  // every byte, NULs included
    };
    GenerationResult r = generate(model, prompt, options, attention, [&](const std::string& piece) {
      echo_prompt();
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
    });
    echo_prompt();
    std::fputs("\n", stdout);
    const double n = static_cast<double>(r.generated_ids.size());
    if (hip) std::fprintf(stderr, "attention: %s\n", hip->backend_note().c_str());
    std::fprintf(stderr, "prompt: %zu tokens in %.3f s (%.1f tok/s); generated: %zu tokens in %.3f s (%.1f tok/s)\n",
                 r.prompt_ids.size(), r.prefill_seconds, r.prompt_ids.size() / std::max(r.prefill_seconds, 1e-9),
                 r.generated_ids.size(), r.decode_seconds, n / std::max(r.decode_seconds, 1e-9));
  });
}

void register_ppl(CLI::App& root) {
  struct Args {
    ModelOptions model;
    std::string text;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = root.add_subcommand("ppl", "Perplexity and mean negative log-likelihood of a text");
  add_model_options(*cmd, args->model);
  cmd->add_option("--text", args->text, "text, or @FILE")->required();
  cmd->callback([args] {
    const std::string text = read_text_argument(args->text, "--text");
    const ModelPreflight preflight = preflight_model(args->model);
    check_fits_context(preflight, static_cast<int64_t>(preflight.encode(text).size()), 0, "text", "--text", "");
    auto model = args->model.load();
    DenseAttention dense;
    TextScore s = score_text(model, text, dense, args->model.context);
    std::printf("tokens: %zu\nmean_nll: %.6f\nperplexity: %.6f\n", s.ids.size(), s.mean_nll, s.perplexity);
  });
}

void register_convert(CLI::App& root) {
  struct Args {
    ModelOptions model;
    std::string to = "hf";
    std::string out_dtype = "f32";
    std::string out;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = root.add_subcommand("convert", "Write a model as a Hugging Face directory (config.json, model.safetensors, tokenizer)");
  cmd->add_option("--model", args->model.model, "llama2.c checkpoint or Hugging Face directory (default: stories15M)");
  cmd->add_option("--tokenizer", args->model.tokenizer, "tokenizer file (default: beside the model)");
  add_choice(*cmd, "--to", args->to, "target format", {"hf"});
  add_choice(*cmd, "--dtype", args->out_dtype, "weights dtype: f32, bf16 or f16", {"f32", "bf16", "f16"});
  cmd->add_option("--out", args->out, "new folder to write (must not exist, or be empty)")->required();
  cmd->callback([args] {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(args->out, ec) && !fs::is_directory(args->out, ec))
      throw InputError("--out " + args->out + " is a file, and convert writes a folder: name a new folder");
    // A folder that holds files (the model's own, say) is never replaced.
    if (fs::is_directory(args->out, ec) && !fs::is_empty(args->out, ec))
      throw InputError("--out " + args->out + " is a folder that already holds files; convert writes a new folder: name one "
                       "that does not exist yet (or is empty)");
    CommandPaths paths;
    paths.output_folders.push_back({"--out", args->out});
    check_command_paths(paths);
    // Loaded in float32 on the CPU; the requested dtype is applied once, when writing.
    auto model = args->model.load();
    const c10::ScalarType dtype = parse_dtype(args->out_dtype);
    convert_to_hf(*model, dtype, args->out);
    std::fprintf(stderr, "wrote %s (Hugging Face format, %s)\n", args->out.c_str(), args->out_dtype.c_str());
  });
}

}  // namespace

void register_bench_generate(CLI::App& bench);
void register_bench_model(CLI::App& bench);

void register_model_commands(CLI::App& root, CLI::App& bench) {
  register_generate(root);
  register_ppl(root);
  register_convert(root);
  register_bench_generate(bench);
  register_bench_model(bench);
}

}  // namespace hipstudio::app
