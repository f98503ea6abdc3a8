// `hipstudio bench model`: end-to-end prefill and decode latency of a whole model, HiP vs dense,
// measured in the same run (warm-up, median of repeats), with the attention share, a per-component
// breakdown and peak device memory. Token ids are random, so any checkpoint works, tokenizer or not.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include "app/bench_model_batch.h"
#include "app/bench_stats.h"
#include "app/commands.h"
#include "app/hip_options.h"
#include "app/cli_options.h"
#include "app/model_preflight.h"
#include "engine/analysis/paired_result.h"
#include "engine/analysis/context_plan.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_memory.h"
#include "engine/backends/hip_attention.h"
#include "engine/model/kv_cache.h"
#include "engine/analysis/memory_estimate.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/generation/prompt_prefill.h"
#include "engine/model/transformer.h"

namespace hipstudio::app {

namespace {

struct SideSamples {
  std::vector<double> prefill, steps;  // ms, every timed run's prefill and decode steps
  // ms, every timed run's decode time over its steps: a token's cost with HiP's mask refreshes
  // (every r_m-th step) counted at their rate. The median step alone is a cached step's.
  std::vector<double> per_token;
  double peak_gib = -1;
};

struct SideResult {
  double prefill_ms = 0, prefill_spread = 0, decode_step_ms = 0, decode_spread = 0;  // medians, half IQR
  double step_median_ms = 0;  // the median single decode step (for HiP a cached one)
  ComponentMs prefill_parts, decode_parts;  // from one extra run with per-layer timing
  double peak_gib = -1;
  std::string backend;
};

class Runner {
 public:
  Runner(std::shared_ptr<const Model> model, std::vector<int32_t> prompt, int64_t decode)
      : model_(std::move(model)), prompt_(std::move(prompt)), decode_(decode),
        cuda_(model_->run.device.is_cuda()) {}

  // One timed run of a side: its prefill ms and per-step decode ms are added to `r`'s samples,
  // and its peak device memory to r.peak_gib.
  void timed_run(AttentionBackend& backend, HipAttention* hip, SideSamples& r) {
    if (hip) hip->reset();
    reset_peak_device_memory();
    const auto [p, s] = run(backend, nullptr);
    graphed_[hip ? 1 : 0] = last_run_graphed_;
    r.prefill.push_back(p);
    r.steps.insert(r.steps.end(), s.begin(), s.end());
    r.per_token.push_back(mean(s));
    // Every step of every run (warm-ups too) on stderr: a run whose mean and median step differ shows
    // which steps were slow.
    std::fprintf(stderr, "bench model: %s run, prefill %.2f ms, decode steps ms:", hip ? "hip" : "dense", p);
    for (const double step : s) std::fprintf(stderr, " %.3f", step);
    std::fprintf(stderr, "\n");
    const DeviceMemoryStats memory = device_memory_stats();
    if (memory.available) r.peak_gib = std::max(r.peak_gib, static_cast<double>(memory.peak_allocated_bytes) / (1ull << 30));
  }

  // One more run, synchronized per layer (eager decode steps: the layer timer needs each layer's
  // launches), for the breakdown columns.
  void breakdown_run(AttentionBackend& backend, HipAttention* hip, SideResult& r) {
    if (hip) {
      hip->reset();
      hip->set_sync_timing(true);
    }
    Breakdown breakdown;
    breakdown.hip = hip;
    run(backend, &breakdown);
    if (hip) hip->set_sync_timing(false);
    r.prefill_parts = breakdown.prefill;
    r.decode_parts = breakdown.decode;
    const double steps_run = static_cast<double>(std::max<int64_t>(1, decode_));
    r.decode_parts.mask /= steps_run;
    r.decode_parts.sparse /= steps_run;
    r.decode_parts.dense /= steps_run;
    r.decode_parts.other /= steps_run;
    if (hip) r.backend = hip->backend_note();
  }

  bool decode_graphed() const { return decode_graphed_; }
  // A side's last timed run: the steps whose attention replayed inside the graphs, and from which layer on.
  const GraphedAttentionSteps& attention_graphed(bool hip) const { return graphed_[hip ? 1 : 0]; }

 private:
  struct Breakdown {
    HipAttention* hip = nullptr;
    ComponentMs prefill, decode;
    bool decoding = false;
    double mask_seconds = 0;
  };

  double now() const {
    if (cuda_) torch::cuda::synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  // Prefill the prompt (chunked as generation does), then decode greedily; returns
  // (prefill ms, per-step decode ms).
  std::pair<double, std::vector<double>> run(AttentionBackend& backend, Breakdown* breakdown) {
    const int64_t capacity = static_cast<int64_t>(prompt_.size()) + decode_;
    Transformer transformer(model_, capacity);
    KVCache cache(model_->config, model_->run, capacity);
    if (breakdown) {
      if (breakdown->hip)
        breakdown->hip->set_observer([breakdown](const HipLayerEvent& e) { breakdown->mask_seconds = e.mask_seconds; });
      const ModelConfig& config = model_->config;
      transformer.set_layer_timer([breakdown, &config](int64_t l, double attention_s, double other_s) {
        ComponentMs& c = breakdown->decoding ? breakdown->decode : breakdown->prefill;
        c.other += other_s * 1e3;
        // HiP replaces only full-attention layers past the first l_d of them (windowed ones stay).
        if (!breakdown->hip || !hip_replaces_layer(config, breakdown->hip->params().dense_layers, l)) {
          c.dense += attention_s * 1e3;
        } else {
          c.mask += breakdown->mask_seconds * 1e3;
          c.sparse += std::max(0.0, attention_s - breakdown->mask_seconds) * 1e3;
        }
        breakdown->mask_seconds = 0;
      });
    }
    // As generation prefills (prompt_prefill.h): the whole prompt in one call on CUDA, chunks of
    // kDefaultPrefillChunk on the CPU.
    const int64_t chunk = cuda_ ? static_cast<int64_t>(prompt_.size()) : kDefaultPrefillChunk;
    double start = now();
    at::Tensor logits = prefill(transformer, prompt_, chunk, cache, backend, LogitsFor::LastToken);
    const double prefill_ms = now() - start;
    // The decode graphs are captured before the clock runs: the first step would otherwise time
    // their capture (a warm-up of every layer), which no later token pays.
    transformer.prepare_decode_graphs(cache, backend);
    if (breakdown) breakdown->decoding = true;
    std::vector<double> steps;
    last_run_graphed_ = {};
    for (int64_t s = 0; s < decode_; ++s) {
      const int32_t next = static_cast<int32_t>(logits[0].argmax().item<int64_t>());
      start = now();
      logits = transformer.forward({next}, cache, backend, LogitsFor::LastToken, Phase::Decode);
      steps.push_back(now() - start);
      if (!breakdown) decode_graphed_ = transformer.last_step_graphed();
      last_run_graphed_.add(transformer.last_step_attention_graphed_from());
    }
    if (breakdown && breakdown->hip) breakdown->hip->set_observer({});
    return {prefill_ms, steps};
  }

  std::shared_ptr<const Model> model_;
  std::vector<int32_t> prompt_;
  int64_t decode_;
  bool cuda_;
  bool decode_graphed_ = false;
  GraphedAttentionSteps last_run_graphed_, graphed_[2];  // [0] dense, [1] HiP
};

void print_row(const char* side, const SideResult& r) {
  const ComponentMs& p = r.prefill_parts;
  const double attention = p.mask + p.sparse + p.dense;
  std::printf("%-6s %11.2f %7.2f %8.1f%% %9.2f %9.2f %9.2f %9.2f %12.3f %7.3f %9.3f %10.1f %8s\n", side, r.prefill_ms,
              r.prefill_spread, p.total() > 0 ? 100.0 * attention / p.total() : 0.0, p.mask, p.sparse, p.dense, p.other,
              r.decode_step_ms, r.decode_spread, r.step_median_ms, r.decode_step_ms > 0 ? 1e3 / r.decode_step_ms : 0.0,
              r.peak_gib >= 0 ? (std::to_string(r.peak_gib).substr(0, 5)).c_str() : "n/a");
}

SideResult summarize(const SideSamples& samples) {
  SideResult r;
  r.prefill_ms = median(samples.prefill);
  r.prefill_spread = half_iqr(samples.prefill);
  r.decode_step_ms = median(samples.per_token);
  r.decode_spread = half_iqr(samples.per_token);
  r.step_median_ms = median(samples.steps);
  r.peak_gib = samples.peak_gib;
  return r;
}

}  // namespace

void register_bench_model(CLI::App& bench) {
  struct Args {
    ModelOptions model;
    HipOptions hip;
    std::string tokens;  // "T" or "T1,T2,..." (parse_bench_tokens); empty: the default length
    int64_t decode = 32;
    int warmup = 1;
    int repeats = 3;
    int decode_rounds = 1;
    uint64_t seed = 1;
    int64_t batch = 1;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = bench.add_subcommand("model", "End-to-end prefill and decode latency of the model, HiP vs dense in the same run");
  add_model_options(*cmd, args->model);
  args->hip.add_model_options(*cmd);
  cmd->add_option("--tokens", args->tokens,
                  "prompt length T (random token ids; default 4096, or the context minus --decode when that is smaller); "
                  "with --batch N also T1,T2,...,TN: each sequence's own length");
  add_number(*cmd, "--decode", args->decode, "decode steps timed after the prompt", int64_t{0}, int64_t{1} << 20);
  add_number(*cmd, "--warmup", args->warmup, "untimed runs first", 0, 1000);
  add_number(*cmd, "--repeats", args->repeats, "timed runs (median)", 1, 10000);
  add_number(*cmd, "--decode-rounds", args->decode_rounds,
             "with --batch N: rounds of --decode steps timed after each run's one prefill (the caches go back to the "
             "prompts between rounds); each round is a sample of the decode times",
             1, 1000);
  add_number(*cmd, "--seed", args->seed, "seed of the random prompt (sequence i of a batch: seed + i)", uint64_t{0});
  add_number(*cmd, "--batch", args->batch,
             "sequences decoded together (N > 1: N different prompts prefilled one by one, then batched decode steps "
             "timed; tokens/s = N x 1000 / ms per step)",
             int64_t{1}, kMaxBatch);
  cmd->callback([args] {
    if (args->decode_rounds != 1 && args->batch == 1)
      throw InputError("--decode-rounds " + std::to_string(args->decode_rounds) +
                       " needs --batch N with N > 1 (a batch-1 run prefills again for every --repeats)");
    const HipModelParams hip_params = args->hip.model_params();
    const ModelPreflight preflight = preflight_model(args->model, /*require_tokenizer=*/false);
    args->hip.check_dense_layers(preflight.config);
    std::vector<int64_t> lengths;  // (sequences) each prompt's length
    if (args->tokens.empty()) {
      // The default prompt length must work on the default model (stories15M: a 256-token context),
      // so the default, and only the default, shrinks to what the context holds, and says so.
      int64_t tokens = 4096;
      if (tokens + args->decode > preflight.context && preflight.context > args->decode) {
        tokens = preflight.context - args->decode;
        std::fprintf(stderr, "note: --tokens defaults to %lld here (the context, %lld tokens, minus --decode %lld); give "
                             "--tokens to choose\n",
                     static_cast<long long>(tokens), static_cast<long long>(preflight.context),
                     static_cast<long long>(args->decode));
      }
      lengths.assign(static_cast<size_t>(args->batch), tokens);
    } else {
      lengths = parse_bench_tokens(args->tokens, args->batch, int64_t{1} << 24);
    }
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    check_fits_context(preflight, longest, args->decode, "prompt", "--tokens", "--decode");
    // The sides run one after the other: N caches live at a time, each of its own length.
    RunMemoryShape shape;
    shape.prompt_tokens = longest;
    shape.new_tokens = args->decode;
    shape.sequences = args->batch;
    if (std::any_of(lengths.begin(), lengths.end(), [&](int64_t t) { return t != longest; })) shape.sequence_prompt_tokens = lengths;
    if (args->batch > 1) {
      // A batch that cannot fit is refused before the weights load (they are counted as still to
      // allocate), naming the largest batch that fits.
      RunMemoryShape before = shape;
      before.weights_resident = false;
      plan_run(preflight.config, parse_run_device(args->model.device, args->model.dtype), before, args->model.context);
    }
    auto model = args->model.load(/*require_tokenizer=*/false);
    const ModelConfig& c = model->config;
    plan_run(c, model->run, shape, args->model.context);  // refuses what cannot fit, against what is free now
    // Sequence i's prompt: random ids from seed + i (sequence 0's is the batch-1 prompt), so the
    // sequences' HiP masks differ.
    std::vector<std::vector<int32_t>> prompts;
    for (int64_t i = 0; i < args->batch; ++i) {
      std::mt19937_64 rng(args->seed + static_cast<uint64_t>(i));
      std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(c.vocab_size - 1));
      std::vector<int32_t> prompt(static_cast<size_t>(lengths[static_cast<size_t>(i)]));
      for (int32_t& t : prompt) t = token(rng);
      prompts.push_back(std::move(prompt));
    }
    if (args->batch > 1) {
      BatchBench bench;
      bench.model = model;
      bench.hip = hip_params;
      bench.prompts = std::move(prompts);
      bench.decode = args->decode;
      bench.warmup = args->warmup;
      bench.repeats = args->repeats;
      bench.decode_rounds = args->decode_rounds;
      run_batch_bench(bench);
      return;
    }
    Runner runner(model, prompts.front(), args->decode);

    DenseAttention dense;
    HipAttention hip(hip_params, c.n_layers);
    // The sides alternate which runs first in each repeat (dense, HiP; then HiP, dense; ...), so
    // neither always meets a cold device or a warm one. Each run's caches live inside
    // Runner::run: an allocation failure unwinds them first.
    SideSamples dense_samples, hip_samples;
    auto run_side = [&](bool hip_side, bool timed) {
      SideSamples scratch;
      SideSamples& into = timed ? (hip_side ? hip_samples : dense_samples) : scratch;
      guard_out_of_memory(model->run, hip_side ? "bench model (HiP side)" : "bench model (dense side)", [&] {
        runner.timed_run(hip_side ? static_cast<AttentionBackend&>(hip) : dense, hip_side ? &hip : nullptr, into);
        return 0;
      });
    };
    for (int i = 0; i < args->warmup + args->repeats; ++i) {
      const bool hip_first = i % 2 == 1;
      run_side(hip_first, i >= args->warmup);
      run_side(!hip_first, i >= args->warmup);
    }
    SideResult d = summarize(dense_samples), h = summarize(hip_samples);
    guard_out_of_memory(model->run, "bench model (breakdown runs)", [&] {
      runner.breakdown_run(dense, nullptr, d);
      runner.breakdown_run(hip, &hip, h);
      return 0;
    });
    const double bandwidth = device_copy_bandwidth(model->run);
    const hip::HipParams& p = hip_params.hip;
    std::printf("bench model: %s on %s; T = %lld prompt tokens + %lld decode steps; HiP k=%lld b_q=%lld b_k=%lld "
                "b_sq=%lld b_sk=%lld sink=%lld window=%lld l_d=%lld r_m=%lld; median of %d after %d warm-up\n",
                model->source.display_name.c_str(), device_description(model->run).c_str(),
                static_cast<long long>(lengths.front()), static_cast<long long>(args->decode), static_cast<long long>(p.k),
                static_cast<long long>(p.b_q), static_cast<long long>(p.b_k), static_cast<long long>(p.b_sq),
                static_cast<long long>(p.b_sk), static_cast<long long>(p.sink), static_cast<long long>(p.window),
                static_cast<long long>(hip_params.dense_layers), static_cast<long long>(hip_params.refresh_every),
                args->repeats, args->warmup);
    std::string decode_path = runner.decode_graphed() ? "CUDA graphs around attention" : "eager launches";
    for (const bool hip_side : {false, true}) {
      const auto& g = runner.attention_graphed(hip_side);
      if (g.steps == 0) continue;
      decode_path += std::string("; ") + (hip_side ? "HiP's" : "dense's") + " attention of layers " +
                     std::to_string(g.from) + " and up inside them on " + std::to_string(g.steps) + " of " +
                     std::to_string(args->decode) + " steps";
    }
    std::printf("HiP backend: %s; decode steps: %s\n", h.backend.c_str(), decode_path.c_str());
    std::printf("%-6s %11s %7s %9s %9s %9s %9s %9s %12s %7s %9s %10s %8s\n", "side", "prefill ms", "+-", "attn", "mask ms",
                "sparse ms", "dense ms", "other ms", "decode ms/tok", "+-", "step med", "decode t/s", "peak GiB");
    print_row("dense", d);
    print_row("hip", h);
    const int64_t refreshes = (args->decode + hip_params.refresh_every - 1) / hip_params.refresh_every;
    std::printf("speedup (dense / HiP): prefill %.2fx, decode %.2fx a token  (decode ms/tok: a run's decode time over "
                "its %lld steps, of which HiP refreshed its masks on %lld (the first and every r_m-th), median over "
                "the runs; step med: the median single step, for HiP a cached one; +-: half the interquartile range "
                "over the timed runs; breakdown columns: one extra run synchronized per layer; attn = attention share "
                "of that run)\n",
                d.prefill_ms / std::max(h.prefill_ms, 1e-9), d.decode_step_ms / std::max(h.decode_step_ms, 1e-9),
                static_cast<long long>(args->decode), static_cast<long long>(refreshes));
    if (bandwidth > 0) {
      // A decode step reads every weight once: that read at the device's copy bandwidth is the
      // floor no attention can beat (dense also reads the whole KV cache on top).
      const double weights = static_cast<double>(weight_bytes(c, model->run.dtype));
      const double floor_ms = weights / bandwidth * 1e3;
      std::printf("decode floor: %.2f GB of weights at %.0f GB/s (measured device copy bandwidth) = %.2f ms/token; "
                  "dense at %.0f%% of it, HiP at %.0f%% (floor / decode ms per token)\n",
                  weights / 1e9, bandwidth / 1e9, floor_ms, 100.0 * floor_ms / std::max(d.decode_step_ms, 1e-9),
                  100.0 * floor_ms / std::max(h.decode_step_ms, 1e-9));
    }
  });
}

}  // namespace hipstudio::app
