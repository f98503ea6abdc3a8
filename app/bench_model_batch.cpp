#include "app/bench_model_batch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include "app/bench_stats.h"
#include "engine/analysis/context_plan.h"
#include "engine/analysis/memory_estimate.h"
#include "engine/analysis/paired_result.h"
#include "engine/backends/hip_attention.h"
#include "engine/formats/errors.h"
#include "engine/generation/batch_decoder.h"
#include "engine/generation/prompt_prefill.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "engine/runtime/device_memory.h"
#include "engine/runtime/out_of_memory.h"

namespace hipstudio::app {

std::vector<int64_t> parse_bench_tokens(const std::string& text, int64_t batch, int64_t max_tokens) {
  std::vector<int64_t> lengths;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const bool digits = !item.empty() && item.size() <= 18 && std::all_of(item.begin(), item.end(), [](char ch) {
      return ch >= '0' && ch <= '9';
    });
    if (!digits)
      throw InputError("--tokens: '" + item + "' is not a prompt length: give one length T or " + std::to_string(batch) +
                       " comma-separated lengths T1,T2,... (one per --batch sequence), each an integer from 1 to " +
                       std::to_string(max_tokens));
    const int64_t value = std::stoll(item);
    if (value < 1 || value > max_tokens)
      throw InputError("--tokens: " + item + " is out of range: each prompt length is from 1 to " + std::to_string(max_tokens));
    lengths.push_back(value);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (lengths.size() == 1) return std::vector<int64_t>(static_cast<size_t>(batch), lengths.front());
  if (static_cast<int64_t>(lengths.size()) != batch)
    throw InputError("--tokens: " + std::to_string(lengths.size()) + " prompt lengths for --batch " + std::to_string(batch) +
                     ": give one length for every sequence or " + std::to_string(batch) + " lengths (or --batch " +
                     std::to_string(lengths.size()) + ")");
  return lengths;
}

double device_copy_bandwidth(const RunDevice& run) {
  if (!run.device.is_cuda()) return 0.0;
  const int64_t bytes = int64_t{1} << 30;
  const auto options = at::TensorOptions().device(run.device).dtype(at::kByte);
  at::Tensor a = at::zeros({bytes}, options), b = at::empty({bytes}, options);
  std::vector<double> seconds;
  for (int i = 0; i < 6; ++i) {
    torch::cuda::synchronize();
    const auto start = std::chrono::steady_clock::now();
    b.copy_(a);
    torch::cuda::synchronize();
    if (i > 0) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(bytes) / median(seconds);
}

namespace {

struct Samples {
  std::vector<double> prefill;   // ms, every timed run's N prefills together
  std::vector<double> per_step;  // ms, every timed run's decode time over its steps (refreshes included)
  std::vector<double> steps;     // ms, every timed run's single steps
  int64_t graphed_steps = 0;     // of them, the steps replayed from CUDA graphs (batch_decoder.h)
  double peak_gib = -1;
};

// One run synchronized per layer: the prefills' and the batched steps' time split into HiP's mask
// search, its sparse attention, dense attention (dense layers, or every layer of the dense side)
// and the rest (Transformer::LayerTimer). decode: mean per step.
struct Breakdown {
  ComponentMs prefill, decode;
  bool decoding = false;
  double mask_seconds = 0;  // the mask searches of the layer running now, summed over the sequences
};

class BatchRunner {
 public:
  explicit BatchRunner(const BatchBench& bench) : bench_(bench), cuda_(bench.model->run.device.is_cuda()) {}

  // One run of a side with one backend per sequence (`hips`: those backends when the side is HiP's,
  // empty for dense): N prefills, then `decode` batched steps fed each sequence's greedy token.
  // Adds its times to `into` (when given) and its peak memory; with `breakdown`, times each layer.
  void run(const std::vector<AttentionBackend*>& backends, const std::vector<HipAttention*>& hips, Samples* into,
           Breakdown* breakdown) {
    const std::shared_ptr<const Model>& model = bench_.model;
    const ModelConfig& c = model->config;
    int64_t longest = 0;
    for (const auto& prompt : bench_.prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(prompt.size()));
    reset_peak_device_memory();
    Transformer transformer(model, longest + bench_.decode);
    // Each sequence's cache a slot of its own length in one storage: a decode step attends every
    // sequence in one launch (decode_batch), and mixed lengths hold only their own rows.
    std::vector<int64_t> capacities;
    for (size_t i = 0; i < backends.size(); ++i)
      capacities.push_back(static_cast<int64_t>(bench_.prompts[i].size()) + bench_.decode);
    BatchKVStorage storage(c, model->run, capacities);
    std::vector<KVCache*> caches;
    std::vector<BatchSequence> batch;
    for (size_t i = 0; i < backends.size(); ++i) {
      caches.push_back(&storage.slot(static_cast<int64_t>(i)));
      batch.push_back({caches.back(), backends[i]});
    }
    Transformer::LayerTimer timer;
    if (breakdown) {
      for (HipAttention* hip : hips) {
        hip->set_sync_timing(true);
        hip->set_observer([breakdown](const HipLayerEvent& e) { breakdown->mask_seconds += e.mask_seconds; });
      }
      const bool hip_side = !hips.empty();
      const int64_t dense_layers = bench_.hip.dense_layers;
      timer = [breakdown, hip_side, dense_layers, &c](int64_t l, double attention_s, double other_s) {
        ComponentMs& part = breakdown->decoding ? breakdown->decode : breakdown->prefill;
        part.other += other_s * 1e3;
        if (!hip_side || !hip_replaces_layer(c, dense_layers, l)) {
          part.dense += attention_s * 1e3;
        } else {
          part.mask += breakdown->mask_seconds * 1e3;
          part.sparse += std::max(0.0, attention_s - breakdown->mask_seconds) * 1e3;
        }
        breakdown->mask_seconds = 0;
      };
      transformer.set_layer_timer(timer);
    }
    // Each prompt as generation prefills it: one call on CUDA, chunks of kDefaultPrefillChunk on the CPU.
    double start = now();
    std::vector<at::Tensor> last;  // (sequences) logits [1, vocab]
    for (size_t i = 0; i < backends.size(); ++i) {
      const int64_t chunk = cuda_ ? static_cast<int64_t>(bench_.prompts[i].size()) : kDefaultPrefillChunk;
      last.push_back(prefill(transformer, bench_.prompts[i], chunk, *caches[i], *backends[i], LogitsFor::LastToken));
    }
    const double prefill_ms = now() - start;
    if (breakdown) breakdown->decoding = true;
    // The timed steps replay CUDA graphs where the side can (the breakdown run's timer keeps its
    // steps eager): captured here, outside them.
    BatchDecoder decoder(transformer, &storage);
    if (!breakdown) decoder.prepare(batch);
    const int rounds = breakdown ? 1 : std::max(1, bench_.decode_rounds);
    std::vector<double> steps, round_means;
    std::vector<at::Tensor> first_round;  // each step's logits in the first round
    for (int round = 0; round < rounds; ++round) {
      if (round > 0) {
        // Back to the end of the prompts: the steps' keys forgotten, HiP's decode masks too (its next
        // step refreshes, as the first after a prefill does).
        for (size_t i = 0; i < caches.size(); ++i) caches[i]->truncate(static_cast<int64_t>(bench_.prompts[i].size()));
        for (HipAttention* hip : hips) hip->reset();
      }
      at::Tensor logits = at::cat(last, 0);  // [N, vocab]
      std::vector<double> round_steps;
      for (int64_t s = 0; s < bench_.decode; ++s) {
        const at::Tensor next = logits.argmax(-1);
        std::vector<int32_t> tokens;
        for (int64_t i = 0; i < next.size(0); ++i) tokens.push_back(static_cast<int32_t>(next[i].item<int64_t>()));
        start = now();
        logits = decoder.step(tokens, batch, timer);
        round_steps.push_back(now() - start);
        // Every round's logits are the first round's, bit for bit (a graphed step equals its eager
        // one): a rollback that left a step's keys or a stale HiP mask behind fails here.
        if (rounds == 1) continue;
        if (round == 0) {
          first_round.push_back(logits.clone());
        } else if (!at::equal(logits, first_round[static_cast<size_t>(s)])) {
          const double diff = (logits - first_round[static_cast<size_t>(s)]).abs().max().item<double>();
          throw std::runtime_error("bench model --batch: decode round " + std::to_string(round + 1) + "'s logits of step " +
                                   std::to_string(s) + " differ from the first round's (max abs " + std::to_string(diff) +
                                   "): going back to the prompts did not restore their state");
        }
      }
      round_means.push_back(mean(round_steps));
      steps.insert(steps.end(), round_steps.begin(), round_steps.end());
    }
    if (breakdown) {
      for (HipAttention* hip : hips) {
        hip->set_sync_timing(false);
        hip->set_observer({});
      }
      const double per_step = 1.0 / static_cast<double>(std::max<int64_t>(1, bench_.decode));
      breakdown->decode.mask *= per_step;
      breakdown->decode.sparse *= per_step;
      breakdown->decode.dense *= per_step;
      breakdown->decode.other *= per_step;
    }
    if (!into) return;
    into->prefill.push_back(prefill_ms);
    into->per_step.insert(into->per_step.end(), round_means.begin(), round_means.end());
    into->steps.insert(into->steps.end(), steps.begin(), steps.end());
    into->graphed_steps += decoder.graphed_steps();
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

void print_row(const char* side, const Samples& s, const Breakdown& b, int64_t sequences) {
  const ComponentMs& p = b.prefill;
  const double attention = p.mask + p.sparse + p.dense;
  const double step_ms = median(s.per_step);
  std::printf("%-6s %11.2f %7.2f %8.1f%% %9.2f %9.2f %9.2f %9.2f %13.3f %7.3f %9.3f %10.1f %8s\n", side, median(s.prefill),
              half_iqr(s.prefill), p.total() > 0 ? 100.0 * attention / p.total() : 0.0, p.mask, p.sparse, p.dense, p.other,
              step_ms, half_iqr(s.per_step), median(s.steps),
              step_ms > 0 ? static_cast<double>(sequences) * 1e3 / step_ms : 0.0,
              s.peak_gib >= 0 ? std::to_string(s.peak_gib).substr(0, 5).c_str() : "n/a");
}

// "4 x 131072 + 4 x 8192": the prompt lengths in runs of equal ones.
std::string lengths_text(const std::vector<std::vector<int32_t>>& prompts) {
  std::string text;
  for (size_t i = 0; i < prompts.size();) {
    size_t j = i;
    while (j < prompts.size() && prompts[j].size() == prompts[i].size()) ++j;
    text += (text.empty() ? "" : " + ") + std::to_string(j - i) + " x " + std::to_string(prompts[i].size());
    i = j;
  }
  return text;
}

}  // namespace

void run_batch_bench(const BatchBench& bench) {
  const Model& model = *bench.model;
  const ModelConfig& c = model.config;
  const int64_t n = static_cast<int64_t>(bench.prompts.size());
  DenseAttention dense;  // no per-sequence state: one object serves every sequence
  std::vector<std::unique_ptr<HipAttention>> hips;  // one per sequence: each keeps its own decode masks
  std::vector<AttentionBackend*> dense_side, hip_side;
  std::vector<HipAttention*> hip_states;
  for (int64_t i = 0; i < n; ++i) {
    hips.push_back(std::make_unique<HipAttention>(bench.hip, c.n_layers));
    hip_side.push_back(hips.back().get());
    hip_states.push_back(hips.back().get());
    dense_side.push_back(&dense);
  }
  BatchRunner runner(bench);
  // As the batch-1 table: the sides alternate which runs first in each repeat, so neither always
  // meets a cold device or a warm one; each run's caches live inside BatchRunner::run, so an
  // allocation failure unwinds them first.
  Samples dense_samples, hip_samples;
  Breakdown dense_parts, hip_parts;
  auto run_side = [&](bool hip, bool timed, Breakdown* breakdown) {
    if (hip)
      for (auto& h : hips) h->reset();  // a run starts new sequences
    guard_out_of_memory(model.run, hip ? "bench model --batch (HiP side)" : "bench model --batch (dense side)", [&] {
      runner.run(hip ? hip_side : dense_side, hip ? hip_states : std::vector<HipAttention*>{},
                 timed ? (hip ? &hip_samples : &dense_samples) : nullptr, breakdown);
      return 0;
    });
  };
  for (int i = 0; i < bench.warmup + bench.repeats; ++i) {
    const bool hip_first = i % 2 == 1;
    run_side(hip_first, i >= bench.warmup, nullptr);
    run_side(!hip_first, i >= bench.warmup, nullptr);
  }
  run_side(false, false, &dense_parts);
  run_side(true, false, &hip_parts);
  const double bandwidth = device_copy_bandwidth(model.run);

  const hip::HipParams& p = bench.hip.hip;
  std::printf("bench model: %s on %s; batch %lld: %lld different prompts of %s tokens, each prefilled alone, then "
              "%lld decode steps of all %lld together; HiP k=%lld b_q=%lld b_k=%lld b_sq=%lld b_sk=%lld sink=%lld "
              "window=%lld l_d=%lld r_m=%lld (one HiP state per sequence); median of %d runs x %d decode rounds from each "
              "run's prefill, after %d warm-up\n",
              model.source.display_name.c_str(), device_description(model.run).c_str(), static_cast<long long>(n),
              static_cast<long long>(n), lengths_text(bench.prompts).c_str(), static_cast<long long>(bench.decode),
              static_cast<long long>(n), static_cast<long long>(p.k), static_cast<long long>(p.b_q),
              static_cast<long long>(p.b_k), static_cast<long long>(p.b_sq), static_cast<long long>(p.b_sk),
              static_cast<long long>(p.sink), static_cast<long long>(p.window),
              static_cast<long long>(bench.hip.dense_layers), static_cast<long long>(bench.hip.refresh_every),
              bench.repeats, std::max(1, bench.decode_rounds), bench.warmup);
  const int64_t timed_steps = static_cast<int64_t>(bench.repeats) * std::max(1, bench.decode_rounds) * bench.decode;
  std::printf("HiP backend: %s; decode steps: projections and MLP over the %lld rows at once, each layer's attention "
              "of every sequence in one launch where the side can (CUDA; dense layers in bf16/f16), each HiP "
              "sequence's mask refresh its own search; replayed from CUDA graphs (attention inside) where the side "
              "can, else eager launches: dense %lld of %lld timed steps, HiP %lld of %lld\n",
              hips.front()->backend_note().c_str(), static_cast<long long>(n),
              static_cast<long long>(dense_samples.graphed_steps), static_cast<long long>(timed_steps),
              static_cast<long long>(hip_samples.graphed_steps), static_cast<long long>(timed_steps));
  std::printf("%-6s %11s %7s %9s %9s %9s %9s %9s %13s %7s %9s %10s %8s\n", "side", "prefill ms", "+-", "attn", "mask ms",
              "sparse ms", "dense ms", "other ms", "decode ms", "+-", "step med", "decode t/s", "peak GiB");
  print_row("dense", dense_samples, dense_parts, n);
  print_row("hip", hip_samples, hip_parts, n);
  const double dense_step = median(dense_samples.per_step), hip_step = median(hip_samples.per_step);
  std::printf("speedup (dense / HiP): prefill %.2fx, decode %.2fx  (prefill ms: the %lld prompts one after another; "
              "decode ms: a batched step of %lld new tokens, a run's decode time over its steps (HiP's mask refreshes "
              "every r_m-th step included), median over the runs' decode rounds; step med: the median single step; decode t/s = "
              "%lld x 1000 / decode ms; +-: half the interquartile range over the timed rounds (prefill: runs); breakdown columns: the "
              "prefills of one extra run synchronized per layer; attn = attention share of them)\n",
              median(dense_samples.prefill) / std::max(median(hip_samples.prefill), 1e-9),
              dense_step / std::max(hip_step, 1e-9), static_cast<long long>(n), static_cast<long long>(n),
              static_cast<long long>(n));
  for (const auto& [side, parts] : {std::pair<const char*, const Breakdown*>{"dense", &dense_parts}, {"hip", &hip_parts}})
    std::printf("decode step breakdown (%s, that run, ms a step): mask %.3f, sparse %.3f, dense %.3f, other %.3f\n", side,
                parts->decode.mask, parts->decode.sparse, parts->decode.dense, parts->decode.other);
  if (bandwidth > 0) {
    // Each sequence's mean key count over the timed steps: step s of a prompt of T has T + s + 1 keys.
    std::vector<int64_t> keys;
    for (const auto& prompt : bench.prompts) keys.push_back(static_cast<int64_t>(prompt.size()) + (bench.decode + 1) / 2);
    const DecodeReadBytes dense_floor = decode_step_read_bytes(c, model.run.dtype, keys, nullptr);
    const DecodeReadBytes hip_floor = decode_step_read_bytes(c, model.run.dtype, keys, &bench.hip);
    const double dense_ms = static_cast<double>(dense_floor.total()) / bandwidth * 1e3;
    const double hip_ms = static_cast<double>(hip_floor.total()) / bandwidth * 1e3;
    std::printf("decode floor at %.0f GB/s (measured device copy bandwidth): dense %.2f GB (weights %.2f + KV %.2f) = "
                "%.2f ms a step, HiP %.2f GB (weights %.2f + KV %.2f) = %.2f ms; dense at %.0f%% of its floor, HiP at "
                "%.0f%% (floor / decode ms; the KV each sequence's attention must read at its mean key count: dense "
                "every key, HiP's layers k + sink + window a KV head)\n",
                bandwidth / 1e9, static_cast<double>(dense_floor.total()) / 1e9, static_cast<double>(dense_floor.weights) / 1e9,
                static_cast<double>(dense_floor.kv) / 1e9, dense_ms, static_cast<double>(hip_floor.total()) / 1e9,
                static_cast<double>(hip_floor.weights) / 1e9, static_cast<double>(hip_floor.kv) / 1e9, hip_ms,
                100.0 * dense_ms / std::max(dense_step, 1e-9), 100.0 * hip_ms / std::max(hip_step, 1e-9));
  }
}

}  // namespace hipstudio::app
