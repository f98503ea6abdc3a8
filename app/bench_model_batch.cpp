#include "app/bench_model_batch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include "app/bench_stats.h"
#include "engine/generation/batched_decode.h"
#include "engine/analysis/context_plan.h"
#include "engine/runtime/device_memory.h"
#include "engine/backends/hip_attention.h"
#include "engine/model/kv_cache.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/generation/prompt_prefill.h"
#include "engine/model/transformer.h"

namespace hipstudio::app {

namespace {

struct Samples {
  std::vector<double> prefill;  // ms, every timed run's N prefills together
  std::vector<double> per_step;  // ms, every timed run's decode time over its steps (refreshes included)
  double peak_gib = -1;
};

class BatchRunner {
 public:
  explicit BatchRunner(const BatchBench& bench) : bench_(bench), cuda_(bench.model->run.device.is_cuda()) {}

  // One run of a side with one backend per sequence: N prefills, then `decode` batched steps fed
  // each sequence's greedy token. Adds its times to `into` (when given) and its peak memory.
  void run(const std::vector<AttentionBackend*>& backends, Samples* into) {
    const std::shared_ptr<const Model>& model = bench_.model;
    const int64_t capacity = static_cast<int64_t>(bench_.prompts.front().size()) + bench_.decode;
    reset_peak_device_memory();
    Transformer transformer(model, capacity);
    std::vector<std::unique_ptr<KVCache>> caches;
    std::vector<BatchSequence> batch;
    for (AttentionBackend* backend : backends) {
      caches.push_back(std::make_unique<KVCache>(model->config, model->run, capacity));
      batch.push_back({caches.back().get(), backend});
    }
    // Each prompt as generation prefills it: one call on CUDA, chunks of kDefaultPrefillChunk on the CPU.
    const int64_t prompt_tokens = static_cast<int64_t>(bench_.prompts.front().size());
    const int64_t chunk = cuda_ ? prompt_tokens : kDefaultPrefillChunk;
    double start = now();
    std::vector<at::Tensor> last;  // (sequences) logits [1, vocab]
    for (size_t i = 0; i < backends.size(); ++i)
      last.push_back(prefill(transformer, bench_.prompts[i], chunk, *caches[i], *backends[i], LogitsFor::LastToken));
    const double prefill_ms = now() - start;
    at::Tensor logits = at::cat(last, 0);  // [N, vocab]
    std::vector<double> steps;
    for (int64_t s = 0; s < bench_.decode; ++s) {
      const at::Tensor next = logits.argmax(-1);
      std::vector<int32_t> tokens;
      for (int64_t i = 0; i < next.size(0); ++i) tokens.push_back(static_cast<int32_t>(next[i].item<int64_t>()));
      start = now();
      logits = decode_batch(transformer, tokens, batch);
      steps.push_back(now() - start);
    }
    if (!into) return;
    into->prefill.push_back(prefill_ms);
    into->per_step.push_back(mean(steps));
    const DeviceMemoryStats memory = device_memory_stats();
    if (memory.available)
      into->peak_gib = std::max(into->peak_gib, static_cast<double>(memory.peak_allocated_bytes) / (1ull << 30));
  }

 private:
  double now() const {
    if (cuda_) torch::cuda::synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  const BatchBench& bench_;
  bool cuda_;
};

void print_row(const char* side, const Samples& s, int64_t sequences) {
  const double step_ms = median(s.per_step);
  std::printf("%-6s %13.2f %8.2f %13.3f %8.3f %11.1f %8s\n", side, median(s.prefill), half_iqr(s.prefill), step_ms,
              half_iqr(s.per_step), step_ms > 0 ? static_cast<double>(sequences) * 1e3 / step_ms : 0.0,
              s.peak_gib >= 0 ? std::to_string(s.peak_gib).substr(0, 5).c_str() : "n/a");
}

}  // namespace

void run_batch_bench(const BatchBench& bench) {
  const Model& model = *bench.model;
  const int64_t n = static_cast<int64_t>(bench.prompts.size());
  DenseAttention dense;  // no per-sequence state: one object serves every sequence (batched steps are eager)
  std::vector<std::unique_ptr<HipAttention>> hips;  // one per sequence: each keeps its own decode masks
  std::vector<AttentionBackend*> dense_side, hip_side;
  for (int64_t i = 0; i < n; ++i) {
    hips.push_back(std::make_unique<HipAttention>(bench.hip, model.config.n_layers));
    hip_side.push_back(hips.back().get());
    dense_side.push_back(&dense);
  }
  BatchRunner runner(bench);
  // As the batch-1 table: the sides alternate which runs first in each repeat, so neither always
  // meets a cold device or a warm one; each run's caches live inside BatchRunner::run, so an
  // allocation failure unwinds them first.
  Samples dense_samples, hip_samples;
  auto run_side = [&](bool hip, bool timed) {
    if (hip)
      for (auto& h : hips) h->reset();  // a run starts new sequences
    guard_out_of_memory(model.run, hip ? "bench model --batch (HiP side)" : "bench model --batch (dense side)", [&] {
      runner.run(hip ? hip_side : dense_side, timed ? (hip ? &hip_samples : &dense_samples) : nullptr);
      return 0;
    });
  };
  for (int i = 0; i < bench.warmup + bench.repeats; ++i) {
    const bool hip_first = i % 2 == 1;
    run_side(hip_first, i >= bench.warmup);
    run_side(!hip_first, i >= bench.warmup);
  }

  const hip::HipParams& p = bench.hip.hip;
  std::printf("bench model: %s on %s; batch %lld: %lld different prompts of T = %lld tokens, each prefilled alone, then "
              "%lld decode steps of all %lld together; HiP k=%lld b_q=%lld b_k=%lld b_sq=%lld b_sk=%lld sink=%lld "
              "window=%lld l_d=%lld r_m=%lld (one HiP state per sequence); median of %d after %d warm-up\n",
              model.source.display_name.c_str(), device_description(model.run).c_str(), static_cast<long long>(n),
              static_cast<long long>(n), static_cast<long long>(bench.prompts.front().size()),
              static_cast<long long>(bench.decode), static_cast<long long>(n), static_cast<long long>(p.k),
              static_cast<long long>(p.b_q), static_cast<long long>(p.b_k), static_cast<long long>(p.b_sq),
              static_cast<long long>(p.b_sk), static_cast<long long>(p.sink), static_cast<long long>(p.window),
              static_cast<long long>(bench.hip.dense_layers), static_cast<long long>(bench.hip.refresh_every),
              bench.repeats, bench.warmup);
  std::printf("HiP backend: %s; decode steps: eager launches (a batched step has no CUDA graph), attention per "
              "sequence, projections and MLP over the %lld rows at once\n",
              hips.front()->backend_note().c_str(), static_cast<long long>(n));
  std::printf("%-6s %13s %8s %13s %8s %11s %8s\n", "side", "prefill ms", "+-", "decode ms", "+-", "decode t/s",
              "peak GiB");
  print_row("dense", dense_samples, n);
  print_row("hip", hip_samples, n);
  const double dense_step = median(dense_samples.per_step), hip_step = median(hip_samples.per_step);
  std::printf("speedup (dense / HiP): prefill %.2fx, decode %.2fx  (prefill ms: the %lld prompts one after another; "
              "decode ms: a batched step of %lld new tokens, a run's decode time over its steps (HiP's mask refreshes "
              "every r_m-th step included), median over the runs; decode t/s = %lld x 1000 / decode ms; +-: half the "
              "interquartile range over the timed runs; no breakdown columns at --batch > 1)\n",
              median(dense_samples.prefill) / std::max(median(hip_samples.prefill), 1e-9),
              dense_step / std::max(hip_step, 1e-9), static_cast<long long>(n), static_cast<long long>(n),
              static_cast<long long>(n));
}

}  // namespace hipstudio::app
