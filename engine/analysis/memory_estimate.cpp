#include "engine/analysis/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <c10/core/ScalarType.h>

#include "engine/formats/errors.h"
#include "engine/backends/attention_backend.h"
#include "engine/backends/hip_attention.h"
#include "engine/model/layer_math.h"
#include "engine/analysis/context_plan.h"
#include "engine/runtime/device_memory.h"
#include "engine/analysis/layer_views_backend.h"
#include "engine/analysis/token_metrics.h"

namespace hipstudio {

namespace {

uint64_t u(int64_t v) { return static_cast<uint64_t>(std::max<int64_t>(0, v)); }

int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

// Iterations of the hierarchical search over n key blocks with a budget of kb blocks: the node
// count halves from kb nodes covering n blocks down to single blocks.
int64_t search_iterations(int64_t key_blocks, int64_t kb) {
  if (kb <= 0 || key_blocks <= kb) return 0;
  return static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(key_blocks) / static_cast<double>(kb)))) + 1;
}

}  // namespace

uint64_t MemoryEstimate::needed(MemoryPlace place) const {
  uint64_t total = 0;
  for (const MemoryLine& l : lines)
    if (!l.resident && l.place == place) total += l.bytes;
  return total;
}

uint64_t MemoryEstimate::bytes(const std::string& name) const {
  for (const MemoryLine& l : lines)
    if (l.name == name) return l.bytes;
  return 0;
}

std::string mib_text(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// Every parameter in the run's dtype except the RMSNorm weights (sandwich and q/k norms
// included), which stay float32.
uint64_t weight_bytes(const ModelConfig& c, c10::ScalarType dtype) {
  const uint64_t norms = u(model_norm_parameter_count(c));
  return (u(model_parameter_count(c)) - norms) * c10::elementSize(dtype) + norms * 4;
}

MemoryEstimate estimate_run_memory(const ModelConfig& c, const RunDevice& run, const RunMemoryShape& s) {
  const bool cuda = run.device.is_cuda();
  const uint64_t e = c10::elementSize(run.dtype);
  const uint64_t total = u(s.prompt_tokens + s.new_tokens);
  const uint64_t chunk = u(std::max<int64_t>(1, s.prefill_chunk));
  const uint64_t L = u(c.n_layers), H = u(c.n_heads), KVH = u(c.n_kv_heads), d = u(c.head_dim);
  const uint64_t qd = u(c.q_dim()), kvd = u(c.kv_dim()), dim = u(c.dim), hidden = u(c.hidden_dim), V = u(c.vocab_size);
  const AnalysisMemoryShape* a = s.analysis;
  const uint64_t sides = a ? 2 : 1;  // a paired run keeps a dense and a HiP model side by side

  MemoryEstimate m;
  auto add = [&](const char* name, uint64_t bytes, MemoryPlace place, bool resident = false) {
    m.lines.push_back({name, bytes, cuda ? place : MemoryPlace::Host, resident});
  };
  add(memory_line::kWeights, weight_bytes(c, run.dtype), MemoryPlace::Device, s.weights_resident);
  // KVCache: per layer K and V, [n_kv_heads, capacity, head_dim] in the run dtype, one per sequence,
  // each with its own prompt's positions and the new tokens.
  const uint64_t sequences =
      s.sequence_prompt_tokens.empty() ? u(std::max<int64_t>(1, s.sequences)) : u(static_cast<int64_t>(s.sequence_prompt_tokens.size()));
  uint64_t cached_positions = sequences * total;
  if (!s.sequence_prompt_tokens.empty()) {
    cached_positions = 0;
    for (const int64_t prompt : s.sequence_prompt_tokens) cached_positions += u(prompt + s.new_tokens);
  }
  add(memory_line::kKvCache, cached_positions * sides * 2 * L * KVH * d * e, MemoryPlace::Device);
  // make_rope_tables: cos and sin [positions, head_dim] per Transformer, per RoPE the layers use
  // (a second one for windowed layers with their own base, as Gemma 3's).
  const bool local_table = c.full_attention_layers() < c.n_layers && !(c.rope_local == c.rope);
  add(memory_line::kRope, sides * (local_table ? 2 : 1) * 2 * total * d * e, MemoryPlace::Device);
  // Transformer::forward on one chunk, its row-wise work in blocks of `rows`: residual x over the
  // chunk, and per block normed h, qkv, the rotated q/k, the attention output's reshape, gate/up,
  // the SwiGLU product and its temporary, and RMSNorm's float32 temporaries; plus the chunk's
  // whole q and attention output (the layer's one attention call).
  // A batched decode step (batched_decode.h) is the same work over one row per sequence: the larger
  // of the two counts.
  const uint64_t act_rows = std::max(chunk, sequences);
  const uint64_t rows = std::min<uint64_t>(act_rows, cuda ? u(kCudaPrefillRows) : act_rows);
  add(memory_line::kActivations,
      act_rows * e * dim +
          rows * (e * (2 * dim + (qd + 2 * kvd) + 2 * qd + 2 * kvd + 2 * hidden + 2 * hidden) + 4 * 3 * dim) +
          act_rows * e * 2 * qd,
      MemoryPlace::Device);
  // Dense attention scores over every key for one chunk: two at a time (scores and their masked
  // copy, then those and the softmax) in the type DenseAttention computes them in; its fused path
  // only builds a boolean causal mask for a chunk after the first (a CUDA prefill has one chunk).
  const uint64_t score_bytes = c10::elementSize(DenseAttention::score_type(run.device, run.dtype));
  const bool later_chunks = chunk < u(s.prompt_tokens);
  const uint64_t scores = DenseAttention::fused_on(run.device) ? (later_chunks ? chunk * total : 0)
                                                               : 2 * H * chunk * total * score_bytes;
  add(memory_line::kScores, scores, MemoryPlace::Device);
  // Logits: the classifier's output for the chunk's last row (or every row), float32 on the host.
  // A paired run instead turns blocks of rows of both sides' residual streams into logits on the
  // device (token_metrics.h): two float32 logits and float64 log-probabilities per row.
  if (a) {
    const uint64_t rows = std::min<uint64_t>(u(s.prompt_tokens), u(token_metric_rows(c.vocab_size)));
    add(memory_line::kLogits, rows * V * (2 * 4 + 4 * 8), MemoryPlace::Device);
  } else {
    // A batched decode step returns one row per sequence.
    const uint64_t logit_rows = s.all_logits ? u(s.prompt_tokens) : sequences;
    add(memory_line::kLogits, logit_rows * V * 4, MemoryPlace::Host);
  }

  if (a) {
    const uint64_t n = u(s.prompt_tokens);
    const uint64_t qkv_elems = (H + 2 * KVH) * n * d;
    const uint64_t kept = std::min<uint64_t>(L, u(a->kept_layers));
    // Both sides' residual streams over the prompt (the per-token metrics read them at the end), the
    // HiP side's entering up to kKeptHipEntryStreams layers at or below l_d (kept so a HiP change,
    // l_d's included, re-runs only the layers it reaches) and entering the layer above the viewed one
    // (the GUI's viewed layer first, until the rest runs).
    const uint64_t entries = c.n_layers > 1 ? static_cast<uint64_t>(kKeptHipEntryStreams) : 0;
    add(memory_line::kHidden, (3 + entries) * n * dim * e, MemoryPlace::Device);
    // The kept layers' Q/K/V (PairedAnalysis::inputs, kept_inputs.h): the run's tensors on a device,
    // float32 host arrays on the CPU.
    const uint64_t sides = u(std::max<int64_t>(1, a->methods));
    add(memory_line::kKeptQkv, std::min<uint64_t>(sides, 2) * kept * qkv_elems * (cuda ? e : 4), MemoryPlace::Device);
    if (cuda) {
      // The tensor views (tensor_layer_views.cpp): a KV group's keys and values in the compute
      // type and about six score tiles of tile_bytes (scores, probabilities, a selection's
      // probabilities and their temporaries).
      const uint64_t compute = run.dtype == c10::kFloat ? 8 : 4;
      add(memory_line::kQualityScratch, 2 * n * d * compute + 6 * static_cast<uint64_t>(kLayerViewsTileBytes), MemoryPlace::Device);
    } else {
      // The reference, one layer at a time: float32 host copies, three float64 attention outputs
      // (dense, HiP, random), and the kernels' per-thread float64 rows over the keys (O(n) each;
      // 64 rows covers a few per thread on a large machine).
      add(memory_line::kQualityScratch, qkv_elems * 4 + 3 * H * n * d * 8 + 64 * n * 8, MemoryPlace::Host);
    }

    const hip::HipParams& p = a->hip.hip;
    // The layers HiP replaces: full-attention ones past the first l_d of them (windowed layers keep
    // their window attention and record no streams).
    int64_t hip_layers = 0;
    for (int64_t l = 0; l < c.n_layers; ++l) hip_layers += hip_replaces_layer(c, a->hip.dense_layers, l) ? 1 : 0;
    const int64_t kb = p.b_k > 0 ? p.k / p.b_k : 0;
    const int64_t key_blocks = ceil_div(static_cast<int64_t>(total), p.b_k);
    const int64_t iterations = search_iterations(key_blocks, kb);
    // Per decode step, HiP layer and head: the keys sparse attention read (selected blocks, sink,
    // window and the tokens since the last refresh) and the keys mask estimation sampled (b_sk
    // representatives of each of 2*kb branches per iteration), int32 each, at most every key.
    const uint64_t sparse_keys = std::min<uint64_t>(total, u(p.k + p.sink + p.window + a->hip.refresh_every));
    const uint64_t mask_keys = std::min<uint64_t>(total, u(2 * kb * std::max<int64_t>(1, iterations) * std::max<int64_t>(1, p.b_sk)));
    const uint64_t streams = u(s.new_tokens) * u(hip_layers) * H;
    add(memory_line::kAccessStreams, sides * streams * ((sparse_keys + mask_keys) * 4 + 2 * 24), MemoryPlace::Host);

    // The kept layers' masks (PairedAnalysis::masks): MaskResult blocks (heads, qbs, kb) int32,
    // counts and iterations int32, branches int64, dense_from int64 per query block; three of them
    // (HiP, oracle, random) and two recall tables (heads, qbs) float64.
    const uint64_t qbs = u(ceil_div(static_cast<int64_t>(n), std::max<int64_t>(1, p.b_q)));
    const uint64_t one_mask = H * qbs * (u(kb) * 4 + 4 + 4 + 8) + qbs * 8;
    const uint64_t masks = sides * kept * (3 * one_mask + 2 * H * qbs * 8);
    add(memory_line::kMasks, masks, MemoryPlace::Host);
    if (a->capture) {
      // A trace: the initial nodes and per iteration 2*kb branches of (begin, end, score, kept).
      const uint64_t traces = u(a->traced_blocks) * (2 * u(kb) * 4 + u(std::max<int64_t>(1, iterations)) * 2 * u(kb) * 32);
      add(memory_line::kTraces, traces, MemoryPlace::Host);
      // The (steps, T) access map of each of the two contexts (mask estimation, sparse attention).
      add(memory_line::kOffloadMaps, a->offload_maps ? 2 * u(s.new_tokens) * total : 0, MemoryPlace::Host);
      // encode_capture builds the whole archive in memory before writing it: the arrays again.
      // (Inputs are written in the run's dtype.)
      // Writing them copies a device run's inputs to the host as float32 (LayerInputs::host).
      if (cuda && a->keep_inputs) add(memory_line::kHostQkvCopies, kept * qkv_elems * 4, MemoryPlace::Host);
      add(memory_line::kCaptureImage, (a->capture_masks ? masks : 0) + traces + (a->keep_inputs ? kept * qkv_elems * e : 0), MemoryPlace::Host);
    }
  }
  return m;
}

DecodeReadBytes decode_step_read_bytes(const ModelConfig& c, c10::ScalarType dtype, const std::vector<int64_t>& key_counts,
                                       const HipModelParams* hip) {
  DecodeReadBytes r;
  r.weights = weight_bytes(c, dtype);
  const uint64_t per_key = 2 * u(c.n_kv_heads) * u(c.head_dim) * c10::elementSize(dtype);  // its key and value, every KV head
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const AttentionMath math = layer_attention_math(c, l);
    const bool sparse = hip && hip_replaces_layer(c, hip->dense_layers, l);
    for (const int64_t keys : key_counts) {
      int64_t read = keys;
      if (math.window > 0) read = std::min(read, math.window);
      if (sparse) read = std::min(read, hip->hip.k + hip->hip.sink + hip->hip.window);
      r.kv += u(read) * per_key;
    }
  }
  return r;
}

uint64_t host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

FreeMemory free_memory(const RunDevice& run) {
  FreeMemory f;
  f.host = host_available_bytes();
  if (run.device.is_cuda()) f.device = device_free_bytes(run.device.has_index() ? run.device.index() : 0);
  return f;
}

bool memory_fits(const MemoryEstimate& m, const RunDevice& run, const FreeMemory& free) {
  auto exceeds = [](uint64_t need, uint64_t available) {
    return available > 0 && static_cast<double>(need) * kHeadroom > static_cast<double>(available);
  };
  const bool cuda = run.device.is_cuda();
  return !(cuda && exceeds(m.needed(MemoryPlace::Device), free.device)) && !exceeds(m.needed(MemoryPlace::Host), free.host);
}

void check_memory_fits(const MemoryEstimate& m, const RunDevice& run, const FreeMemory& free, const RunMemoryShape& s) {
  const bool cuda = run.device.is_cuda();
  const uint64_t device_need = cuda ? m.needed(MemoryPlace::Device) : 0;
  const uint64_t host_need = m.needed(MemoryPlace::Host);
  auto exceeds = [](uint64_t need, uint64_t available) {
    return available > 0 && static_cast<double>(need) * kHeadroom > static_cast<double>(available);
  };
  const bool device_short = cuda && exceeds(device_need, free.device);
  const bool host_short = exceeds(host_need, free.host);
  if (!device_short && !host_short) return;

  const std::string where = device_short ? run.device.str() : cuda ? "the host" : "cpu";
  const uint64_t need = device_short ? device_need : host_need;
  const uint64_t available = device_short ? free.device : free.host;
  const MemoryPlace place = device_short || !cuda ? MemoryPlace::Device : MemoryPlace::Host;
  std::string lines;
  for (const MemoryLine& l : m.lines) {
    if (cuda && l.place != place) continue;
    if (l.bytes == 0) continue;
    lines += (lines.empty() ? "" : ", ") + l.name + " " + mib_text(l.bytes) + (l.resident ? " (already loaded)" : "");
  }
  std::string fixes = "use a shorter prompt (" + std::to_string(s.prompt_tokens) + " tokens now), fewer " +
                      (s.analysis ? "--decode steps" : "--max-tokens") + " (" + std::to_string(s.new_tokens) + " now)";
  if (s.sequences > 1) fixes += ", fewer --batch sequences (" + std::to_string(s.sequences) + " now, each its own KV cache)";
  if (s.analysis && s.analysis->capture) fixes += ", fewer --trace blocks or --views without mask/cache, --no-inputs";
  if (run.dtype == c10::kFloat) fixes += ", --dtype bf16 (half the KV cache)";
  if (cuda && device_short) fixes += ", or --device cpu";
  throw InputError("this run needs about " + mib_text(need) + " more on " + where + " (" + lines + ") but only " +
                   mib_text(available) + " is free" +
                   (device_short ? " (free device memory plus LibTorch's cached blocks)" : " (MemAvailable)") +
                   ", with a 10% margin: " + fixes);
}

}  // namespace hipstudio
