#pragma once
// CUDA HiP kernels: the plain C++ interface (no torch, no CUDA headers needed to include it).
//
// Every kernel takes a POD launch struct (device pointers, element strides, sizes, HipParams by
// value) and runs on the legacy default stream unless a stream is given; it orders with
// LibTorch's default stream. Errors (bad arguments, a failing CUDA call or launch) throw
// hipstudio::gpu::CudaError with the call and the CUDA message; nothing calls exit().
//
// Layouts (elements, last dimension contiguous; strides in elements):
//   Q   (batch, hq,  tq, d)      K, V (batch, hkv, tk, d)      out (batch, hq, tq, d)
//   blocks (batch, hq, qbs, kb) int32, ascending key blocks, -1 padded    counts (batch, hq, qbs) int32
//   positions (tq) int64 on the device, shared by the batch; null: query i sits at tk - tq + i.
//   The kernels trust positions (each in [0, tk)) and selections (inside each query block's
//   [lo, hi), as HiP, the oracle and the random baseline produce); the LibTorch binding checks
//   positions, and unlike kernels/key_set.cpp the GPU does not de-duplicate overlapping selections.
// Semantics are those of kernels/mask_reference.h and kernels/sparse_attention_reference.h.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/hip_params.h"
#include "kernels/hip_trace.h"
#include "kernels/score_transform.h"

namespace hipstudio::gpu {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The element type a kernel reads and writes (the engine maps at::ScalarType onto it).
enum class ElementType : int32_t { kF32 = 0, kBF16 = 1, kF16 = 2 };
const char* dtype_name(ElementType t);

// "" when the kernels were built and a CUDA device is usable, else the reason (for the engine's
// "falling back to the CPU" message).
std::string device_status();
bool device_available();
int device_sm_count();
int device_smem_optin();  // the most dynamic shared memory one block may opt in to, in bytes
std::string device_name();  // e.g. "NVIDIA H100 80GB HBM3, 132 SMs, 50 MB L2"

struct Strides {
  int64_t b = 0, h = 0, t = 0;  // elements
};

struct MaskLaunch {
  const void* q = nullptr;          // (batch, hq, tq, d)
  const void* k = nullptr;          // (batch, hkv, tk, d)
  ElementType dtype = ElementType::kF32;        // kF32: exact float64 scores (bit-identical masks); kBF16/kF16: tensor cores
  Strides q_stride, k_stride;
  const int64_t* positions = nullptr;
  int64_t batch = 1, hq = 0, hkv = 0, tq = 0, tk = 0, d = 0;
  hip::HipParams hip;
  int32_t* blocks = nullptr;        // (batch, hq, qbs, kb)
  int32_t* counts = nullptr;        // (batch, hq, qbs)
  int32_t* iterations = nullptr;    // (batch, hq, qbs) or null
  int64_t* branches = nullptr;      // (batch, hq, qbs) or null
  // Trace of one (batch, head, query block); trace_head < 0: none. trace_buffer: mask_trace_bytes(kb).
  // trace_every_head: instead every head of (trace_batch, trace_query_block), head h's trace at byte
  // h * mask_trace_bytes(kb) of a buffer of hq traces (one launch where a decode refresh's recording
  // needs them all: a launch per head cost ~0.7 ms each, 1024 a refresh step of an 8B model).
  int64_t trace_batch = 0, trace_head = -1, trace_query_block = -1;
  bool trace_every_head = false;
  void* trace_buffer = nullptr;
  bool traced() const { return trace_head >= 0 || trace_every_head; }
  void* stream = nullptr;           // cudaStream_t; null: legacy default stream
  // Warp-search path (bf16/f16 without a trace, Kb <= 512, <= 32 sampled rows, d 64 or 128): warps
  // per search, 0 = chosen by size; tests force 1..16 (a power of two, <= 4 above 16 sampled rows).
  int warps_per_search = 0;
  // Few-search path (the warp-search shapes with <= 16 sampled rows, e.g. decode): CTAs per search,
  // 1, 2 or 4 (a thread-block cluster, sm_90); 0 = chosen by size (and never when warps_per_search
  // is set), -1 = never. Tests force each.
  int ctas_per_search = 0;
  // A decode refresh inside a CUDA graph (engine/generation/decode_graph.h), few-search path only (see
  // mask_in_decode_graph_supported), one query (tq 1, batch 1, no positions):
  // device_position: the query's position, read on the device when the kernel runs (a graph replays
  //   at every refresh's position); the keys are [0, position], and tk above is only their bound
  //   (the cache's capacity).
  // decode_rows / counts_by_extra / tail_room: the search writes the refreshed mask laid out for
  //   the cached steps itself, as build_decode_rows would from blocks and counts (decode_rows.h),
  //   with the dense tail from the search range's end (search_hi at the position): no second
  //   launch, and no host value. blocks and counts may then be null.
  // after_prior: launched as a programmatic dependent of the kernel before it on the stream (sm_90):
  //   its set-up overlaps that kernel (the q/k/v projection with its RoPE epilogue, or the RoPE
  //   kernel) and the kernels still running before it, which let their dependents start at once,
  //   reading nothing but the device position, written before them, and writing nothing; it reads
  //   Q and K only after that kernel has finished.
  const int64_t* device_position = nullptr;
  int32_t* decode_rows = nullptr;      // (hq, kb + tail_room)
  int32_t* counts_by_extra = nullptr;  // (tail_room + 1, hq)
  int64_t tail_room = 0;
  bool after_prior = false;
};

// Validates (CudaError naming the problem) and launches the mask estimation: the bf16/f16 shapes
// the warp-search kernel covers run W warps per (batch, head, query block), or, few searches of
// <= 16 sampled rows (decode), a CTA or 2-CTA cluster each; everything else one CTA per (batch,
// head, query block); all in one launch.
void launch_estimate_masks(const MaskLaunch& l);
// Whether launch_estimate_masks takes l's device_position / decode_rows (the few-search path serves l).
bool mask_in_decode_graph_supported(const MaskLaunch& l);
size_t mask_trace_bytes(int64_t kb);
// A trace's layout: a header, then one fixed-size record per iteration; mask_trace_used_bytes is
// the prefix that a trace of `iterations` iterations fills (what needs copying to the host).
size_t mask_trace_header_bytes(int64_t kb);
size_t mask_trace_used_bytes(int64_t kb, int iterations);
int mask_trace_iterations(const uint8_t* header);  // from a header copied to the host
// Decodes a trace copied to the host (at least its used bytes); header fields come from the search range.
hip::MaskTrace decode_mask_trace(const uint8_t* host, size_t size, int64_t kb, int64_t head, int64_t query_block,
                                 int64_t row_begin, int64_t row_end, int64_t p0, int64_t lo, int64_t hi,
                                 int64_t dense_from);

struct AttentionLaunch {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;              // (batch, hq, tq, d), same dtype
  ElementType dtype = ElementType::kBF16;       // kF32: SIMT float32; kBF16/kF16: tensor cores (d <= 128, d % 8 == 0)
  Strides q_stride, k_stride, v_stride, out_stride;
  const int64_t* positions = nullptr;
  // Per-sequence key counts, int32 (batch) on the device, read when the kernel runs (a graph
  // replays them): batch entry b attends over its keys [0, key_counts[b]) with its queries at their
  // end (query i at key_counts[b] - tq + i), and tk is only their bound (the slots each entry's K/V
  // hold). A decode batch of sequences of different lengths over caches of one capacity. The caller
  // keeps each in [tq, tk]; positions must then be null. Null: every entry has tk keys.
  const int32_t* key_counts = nullptr;
  // With key_counts, optionally: batch entry b's keys and values are the rows [key_starts[b],
  // key_starts[b] + key_counts[b]) of K and V (int32 (batch) on the device, read when the kernel
  // runs), which the batch then shares (their batch strides are ignored; tk bounds every entry's
  // last row): the sequences' caches as slots of different capacities in one tensor per layer.
  const int32_t* key_starts = nullptr;
  int64_t batch = 1, hq = 0, hkv = 0, tq = 0, tk = 0, d = 0;
  hip::HipParams hip;
  // The logits' scale and soft-cap (kernels/score_transform.h); the defaults take today's code path
  // and bits (a cap is one branch on the launch's arguments, applied to each score before the mask).
  hip::ScoreTransform score;
  const int32_t* blocks = nullptr;  // (batch, hq, qbs, kb); selection inside each block's [lo, hi)
  const int32_t* counts = nullptr;  // (batch, hq, qbs)
  int num_splits = 0;               // key-list splits per CTA (decode); 0: chosen to fill the GPU
  void* workspace = nullptr;        // attention_workspace_bytes(...) bytes when splits > 1
  // The fused split merge's done-counters, attention_counter_bytes(...) bytes: zero before the
  // first call and left zero by every completed call, so a caller keeps one buffer per stream and
  // reuses it with no per-call memset. Never share it with anything else: the counters must stay
  // at the same place between calls. Null: the workspace's tail serves, which must then be zero
  // (a fresh DeviceBuffer is).
  void* counters = nullptr;
  void* stream = nullptr;
  // The caller's promise that blocks, counts, positions, key_counts and every key and value before the query
  // rows' first position were complete before any kernel that may still run when this launch starts
  // (the kernels before it that let their dependents start at once, and the kernel each of those
  // followed), and that those kernels write nothing else the attention reads. A cached decode
  // step: the q/k/v projection with the RoPE and cache write in its epilogue (or the projection,
  // then the RoPE kernel), which writes Q and the new key and value, after the previous layer's
  // projections, which write only the residual stream. Then decode CTAs of the tensor-core kernel
  // are launched as a programmatic dependent on sm_90: they lay out their key list and start
  // copying those older keys (writing no global memory) while those kernels run, and read Q and the
  // newer keys after them.
  bool mask_before_prior_kernel = false;
  // Decode launches (<= 16 query rows a CTA) of 2-16 splits merge the splits inside a thread-block
  // cluster of that many CTAs (distributed shared memory) where the device launches clusters, the
  // code is sm_90's and all clusters fit at once; false, or elsewhere: through the workspace and
  // the counters, as every other split launch. Both give the same bits (tests compare them).
  bool cluster_merge = true;
};

// Splits that estimate_attention would use (resolves num_splits == 0), and the workspace they need.
int attention_splits(const AttentionLaunch& l);
size_t attention_workspace_bytes(const AttentionLaunch& l, int splits);
size_t attention_counter_bytes(const AttentionLaunch& l);
// Block-sparse attention over sink + selected blocks + dense tail (prefill and decode).
// On sm_90 devices, launches of > 32 query rows a CTA without a key split (prefill with b_q >= 64)
// run the wgmma kernel when the build has it (kernels/cuda/sm90a/); the environment variable
// HIPSTUDIO_ATTN_WGMMA, read at every launch, overrides: 0 never, 1 required (a CudaError where
// the device or build has none), unset or "auto" as described.
void sparse_attention(const AttentionLaunch& l);
// Launches that took the wgmma kernel so far in this process (tests check which path ran).
int64_t attention_wgmma_launches();

// Device memory and timing helpers for tests and benchmarks (plain C++, RAII).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // zero-filled
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;
  void fill_bytes(int value);  // cudaMemset (poisoning)

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

void synchronize();
// Milliseconds of `fn` on the default stream between two CUDA events (fn enqueues work).
template <class F>
double time_ms(F&& fn);
class EventPair {
 public:
  // Records on `stream` (a cudaStream_t; null: the legacy default stream, which a non-blocking
  // stream's work does not wait for, so time such work on its own stream).
  explicit EventPair(void* stream = nullptr);
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void start();
  double stop_ms();  // records, synchronizes, returns elapsed ms

 private:
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* stream_ = nullptr;
};
template <class F>
double time_ms(F&& fn) {
  EventPair e;
  e.start();
  fn();
  return e.stop_ms();
}

// float <-> bf16/f16 on the host (round to nearest even), for tests.
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_f16(float f);
float f16_to_float(uint16_t h);

}  // namespace hipstudio::gpu
