#pragma once
// What a run will allocate, line by line, before it allocates anything: the model's weights, the KV
// cache, one prefill chunk's activations, the logits it keeps, and for a paired analysis (and a
// capture built from it) the recorded extras. Runs compare it with what the machine has free and
// refuse with these numbers instead of dying half-way on an out-of-memory error.
//
// The counts follow the code that allocates: KVCache (kv_cache.cpp), Transformer::forward and its
// RoPE tables (transformer.cpp, rope.cpp), run_paired_analysis (paired_analysis.cpp) and
// build_capture / encode_capture (captures/). They are estimates of the large buffers, not of every
// small temporary, so a margin stays on top (kHeadroom).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/analysis/hip_model_params.h"
#include "engine/formats/model_config.h"
#include "engine/runtime/device.h"

namespace hipstudio {

enum class MemoryPlace { Device, Host };  // on the run device / in host RAM (the same on CPU runs)

struct MemoryLine {
  std::string name;        // what it is, as the refusal message prints it
  uint64_t bytes = 0;
  MemoryPlace place = MemoryPlace::Device;
  bool resident = false;   // already allocated (the loaded weights): shown, not compared with free memory
};

struct MemoryEstimate {
  std::vector<MemoryLine> lines;
  // Bytes still to allocate at `place` (resident lines excluded); on a CPU run both places are host RAM.
  uint64_t needed(MemoryPlace place) const;
  // The line called `name` (0 when absent).
  uint64_t bytes(const std::string& name) const;
};

// Names of the lines, for callers and tests.
namespace memory_line {
inline constexpr const char* kWeights = "weights";
inline constexpr const char* kKvCache = "KV cache";
inline constexpr const char* kRope = "RoPE tables";
inline constexpr const char* kActivations = "activations per prefill chunk";
inline constexpr const char* kScores = "attention scores per prefill chunk";
inline constexpr const char* kLogits = "logits";
inline constexpr const char* kHidden = "residual streams of both sides";
inline constexpr const char* kKeptQkv = "kept layers' Q/K/V";
inline constexpr const char* kHostQkvCopies = "host float32 copies of the kept Q/K/V (capture)";
inline constexpr const char* kQualityScratch = "layer views scratch";
inline constexpr const char* kAccessStreams = "decode access streams";
inline constexpr const char* kMasks = "masks (layers x heads, HiP/oracle/random)";
inline constexpr const char* kTraces = "search traces";
inline constexpr const char* kOffloadMaps = "offloading maps";
inline constexpr const char* kCaptureImage = "capture file image";
}  // namespace memory_line

// How many residual streams a paired run's HiP side keeps at or below its first HiP layer (those
// entering l_d - 3 .. l_d; engine/analysis/paired_analysis.cpp): lowering l_d by up to 3 then resumes at
// the new l_d. A bound, not l_d of them: each is the prompt's whole stream (256 MB at 32k tokens of
// an 8B model, 1 GiB at 128k), and the plan counts this many whatever l_d a later re-run picks.
constexpr int64_t kKeptHipEntryStreams = 4;

// The extras of a paired dense-vs-HiP run and of a capture built from it.
struct AnalysisMemoryShape {
  HipModelParams hip;
  int64_t kept_layers = 0;        // layers whose Q/K/V (run's device) and masks (host) the run keeps
  bool capture = false;           // a capture is built and encoded in memory after the run
  bool capture_masks = false;     // the "mask" view: HiP, oracle and random masks of the kept layers
  bool keep_inputs = true;        // the capture stores the Q/K/V copies
  int64_t traced_blocks = 0;      // query blocks traced (the "iterations" view)
  bool offload_maps = false;      // the "cache" view's access maps, (steps, T) bytes per context
  // Sides a method comparison runs (--methods): each keeps its masks and access streams to the end;
  // the later ones drop their Q/K/V when done (run_method_comparison's later_inputs false), so two
  // sets of kept inputs are held at once at most.
  int64_t methods = 1;
};

struct RunMemoryShape {
  int64_t prompt_tokens = 0;
  int64_t new_tokens = 0;         // decode steps (each side for an analysis)
  int64_t prefill_chunk = 0;      // positions per forward call
  bool all_logits = false;        // float32 logits of every prompt position are kept (ppl, analysis)
  const AnalysisMemoryShape* analysis = nullptr;  // a paired run: two models' caches and the extras
  int64_t sequences = 1;          // sequences decoded together (--batch): each its own KV cache
  // Each sequence's prompt length when they differ (bench model --tokens T1,T2,...): sequence i's
  // cache holds sequence_prompt_tokens[i] + new_tokens positions, and `sequences` is its size;
  // prompt_tokens is then the longest (the RoPE tables and a prefill's activations). Empty: every
  // sequence has prompt_tokens.
  std::vector<int64_t> sequence_prompt_tokens{};
  // The weights are loaded already (the usual case: the plan runs after loading, against the free
  // memory left). false: a plan before loading, which counts them as still to allocate.
  bool weights_resident = true;
};

// Bytes of the weights as load_model places them: matrices in the run dtype, norms in float32.
uint64_t weight_bytes(const ModelConfig& config, c10::ScalarType dtype);

MemoryEstimate estimate_run_memory(const ModelConfig& config, const RunDevice& run, const RunMemoryShape& shape);

// The bytes one decode step must read from device memory at the least, the floor no kernel beats
// (bench model prints each side's time against it at the device's copy bandwidth): every weight
// once, plus each sequence's keys and values its attention reads. key_counts: each sequence's keys
// at the step (its position + 1). hip null: the dense side, every layer reading all its keys (a
// windowed layer its last W). With HiP, a layer HiP replaces (hip_replaces_layer) reads per KV head
// at least one query head's selection on a cached step: min(keys, k + sink + window) keys (the
// paper's section 3: k selected keys, with the sink and the window on top); the others as dense.
// Mask refreshes and the union over a KV group's query heads only add to it.
struct DecodeReadBytes {
  uint64_t weights = 0;
  uint64_t kv = 0;  // every sequence's keys and values, all layers
  uint64_t total() const { return weights + kv; }
};
DecodeReadBytes decode_step_read_bytes(const ModelConfig& config, c10::ScalarType dtype,
                                       const std::vector<int64_t>& key_counts, const HipModelParams* hip);

// Free memory in bytes, 0 where unknown. CPU: host = MemAvailable. CUDA: device = free device memory
// plus the blocks LibTorch's caching allocator holds but does not use (0 when this build cannot ask).
struct FreeMemory {
  uint64_t device = 0;
  uint64_t host = 0;
};
FreeMemory free_memory(const RunDevice& run);
uint64_t host_available_bytes();

// Room left on top of the estimate for what it does not count (small temporaries, fragmentation).
inline constexpr double kHeadroom = 1.10;

// Throws InputError when what the run still needs exceeds what is free on either side (a side whose
// free figure is 0 is not checked). The message lists every line in MiB, the free figure and the
// ways out: a shorter prompt, fewer --max-tokens / --decode, fewer traced blocks, --dtype bf16 (f32
// runs), --device cpu (CUDA runs).
void check_memory_fits(const MemoryEstimate& estimate, const RunDevice& run, const FreeMemory& free,
                       const RunMemoryShape& shape);
// The same test without the message: whether what the run still needs fits on both sides.
bool memory_fits(const MemoryEstimate& estimate, const RunDevice& run, const FreeMemory& free);

// "12.3 MiB"
std::string mib_text(uint64_t bytes);

}  // namespace hipstudio
