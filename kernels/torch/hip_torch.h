#pragma once
// LibTorch binding of the CUDA HiP kernels (kernels/cuda/hip_cuda.h): at::Tensor in, at::Tensor
// out, every argument checked with a message that names the tensor and the rule. Compiles against
// CPU-only LibTorch 1.13 and CUDA LibTorch 2.x; without CUDA kernels (or without a GPU) every
// kernel call throws hipstudio::gpu::CudaError and cuda_kernels_status() says why, so the engine
// can fall back to the CPU path and say so. Work runs on the legacy default stream (LibTorch's
// default stream).
//
// Shapes: q (hq, tq, d) or (batch, hq, tq, d); k, v (hkv, tk, d) or (batch, hkv, tk, d), last
// dimension contiguous, all one dtype (float32: exact masks / float32 attention; bfloat16 or
// float16: tensor cores). positions: undefined (query i at tk - tq + i) or int64 (tq).
// Masks: blocks (batch?, hq, qbs, kb) int32 ascending, -1 padded; counts (batch?, hq, qbs) int32.
#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

#include "kernels/hip_params.h"
#include "kernels/hip_trace.h"
#include "kernels/mask_reference.h"
#include "kernels/score_transform.h"

namespace hipstudio::hip_torch {

bool cuda_kernels_built();
// "" when the kernels were built and a GPU is usable; otherwise the reason.
std::string cuda_kernels_status();

struct MaskTensors {
  at::Tensor blocks;      // (batch?, hq, qbs, kb) int32
  at::Tensor counts;      // (batch?, hq, qbs) int32
  at::Tensor iterations;  // (batch?, hq, qbs) int32
  at::Tensor branches;    // (batch?, hq, qbs) int64
};

MaskTensors estimate_masks(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p,
                           const at::Tensor& positions = at::Tensor());
// Same, writing into preallocated tensors of the right shapes and dtypes (all four defined).
void estimate_masks_into(MaskTensors& out, const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p,
                         const at::Tensor& positions = at::Tensor());
// Same, plus the trace of one (head, query block) of batch entry `batch`.
std::pair<MaskTensors, hip::MaskTrace> estimate_masks_traced(const at::Tensor& q, const at::Tensor& k,
                                                             const hip::HipParams& p, int64_t head,
                                                             int64_t query_block, const at::Tensor& positions = at::Tensor(),
                                                             int64_t batch = 0);
// Same, plus the traces of query block `query_block` of every head (head h at [h]), in one launch.
std::pair<MaskTensors, std::vector<hip::MaskTrace>> estimate_masks_traced_every_head(
    const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p, int64_t query_block,
    const at::Tensor& positions = at::Tensor(), int64_t batch = 0);
// A (3-D) mask copied to the host as the reference's MaskResult (dense_from from the search ranges).
hip::MaskResult to_mask_result(const MaskTensors& m, const hip::HipParams& p, int64_t tq, int64_t tk,
                               const at::Tensor& positions = at::Tensor());

// Block-sparse attention; num_splits 0 picks the split of the key list that fills the GPU; score:
// the logits' scale and soft-cap (kernels/score_transform.h; the default is plain attention).
at::Tensor sparse_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& blocks,
                            const at::Tensor& counts, const hip::HipParams& p,
                            const at::Tensor& positions = at::Tensor(), int num_splits = 0,
                            const at::Tensor& out = at::Tensor(),  // out: preallocated, Q's shape
                            const hip::ScoreTransform& score = {});

// The same for a batch of sequences of different lengths in one launch (a batched decode step):
// q (batch, hq, tq, d); key_counts int32 (batch) on Q's device, read when the kernel runs: entry b
// attends over its first key_counts[b] keys with its queries at their end, as sparse_attention of
// that entry alone over exactly those keys (the same bits at the same num_splits). Its keys: with
// key_starts undefined, k[b] and v[b] of k, v (batch, hkv, capacity, d); with key_starts (int32
// (batch) on Q's device), rows [key_starts[b], key_starts[b] + key_counts[b]) of k, v (hkv, rows,
// d), one tensor the batch shares (caches of different capacities side by side). Each count must
// lie in [tq, the entry's capacity] (not checked: reading them would wait for the device).
at::Tensor sparse_attention_batch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& blocks,
                                  const at::Tensor& counts, const hip::HipParams& p, const at::Tensor& key_counts,
                                  const at::Tensor& key_starts = at::Tensor(), int num_splits = 0,
                                  const at::Tensor& out = at::Tensor(), const hip::ScoreTransform& score = {});

// The same attention as a launch that a CUDA graph captures and replays at later positions
// (engine/generation/decode_graph.cpp): on `stream` (a cudaStream_t; null: the legacy default stream),
// with `positions` (tq int64 on Q's device) read when the kernel runs, so only their form is
// checked here (the caller keeps each in [0, tk)), into `out` (Q's shape), and with the split
// partials in `workspace` from sparse_attention_workspace() (undefined where the launch does not
// split). The caller keeps the workspace as long as the graph: the buffers sparse_attention()
// shares between its calls may be reallocated by a later, larger one. mask_before_prior_kernel:
// the caller's promise of gpu::AttentionLaunch's field of that name (kernels/cuda/hip_cuda.h).
void sparse_attention_on_stream(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& blocks,
                                const at::Tensor& counts, const hip::HipParams& p, const at::Tensor& positions,
                                const at::Tensor& out, const at::Tensor& workspace, void* stream,
                                bool mask_before_prior_kernel);
// A zero-filled workspace for sparse_attention_on_stream with these arguments (undefined: none
// needed). Every launch leaves its done-counters zero again, so one workspace serves every call of
// the same shapes, one after another.
at::Tensor sparse_attention_workspace(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                      const at::Tensor& positions, const at::Tensor& out);
// sparse_attention_batch as a launch that a CUDA graph captures (engine/generation/batch_decode_graph.cpp):
// on `stream`, key_counts (and key_starts) read when the kernel runs, num_splits chosen by the
// launch's shapes alone (0), into `out` (Q's shape), the split partials in `workspace` from
// sparse_attention_batch_workspace() with the same arguments (undefined where the launch does not
// split; kept as long as the graph). The same bits as sparse_attention_batch of the same inputs.
void sparse_attention_batch_on_stream(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                      const at::Tensor& key_counts, const at::Tensor& key_starts, const at::Tensor& out,
                                      const at::Tensor& workspace, void* stream, const hip::ScoreTransform& score = {});
at::Tensor sparse_attention_batch_workspace(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                            const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                            const at::Tensor& key_counts, const at::Tensor& key_starts,
                                            const at::Tensor& out);

// A refreshed decode mask (3-D, one query block) laid out for the cached steps after it, in one
// launch (kernels/cuda/decode_rows.h): rows (hq, 1, kb + tail_room) hold each head's selected
// blocks, then tail_start, tail_start + 1, ... (tail_room of them), then -1; counts_by_extra
// (tail_room + 1, hq, 1) holds counts + e in [e], the counts of a step whose tail moved e blocks on.
struct DecodeRows {
  at::Tensor rows, counts_by_extra;
};
DecodeRows decode_rows(const MaskTensors& mask, int64_t tail_start, int64_t tail_room);
// Same, into `into`'s tensors (contiguous int32 of those shapes on the mask's device), on `stream`
// (a cudaStream_t; null: the legacy default stream): a decode graph reads them where they are.
void decode_rows_into(DecodeRows& into, const MaskTensors& mask, int64_t tail_start, int64_t tail_room, void* stream);

// A decode refresh as a CUDA graph captures it (engine/backends/hip_attention.h): the search of q's
// one query (hq, 1, d) over k's keys [0, position] (k: the whole cache; `position`, int64 (1) on the
// device, is read when the kernel runs), written straight into `into` in decode_rows' layout with
// the dense tail from search_hi at that position: what estimate_masks and decode_rows_into give,
// in one launch and with no host value. On `stream`; after_prior: the caller's promise that the
// kernel before it on the stream (and the one before that, which may let it start at once) writes
// nothing else this reads but Q and the position's key (the search then sets up while they run).
// Only where refresh_in_decode_graph_supported.
bool refresh_in_decode_graph_supported(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p);
void refresh_decode_rows_on_stream(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p,
                                   const at::Tensor& position, DecodeRows& into, int64_t tail_room, void* stream,
                                   bool after_prior);

// Dense baseline: LibTorch's scaled-dot-product attention with one backend forced (torch >= 2).
enum class DenseBackend { kAuto, kFlash, kCuDNN, kEfficient, kMath };
const char* dense_backend_name(DenseBackend b);
bool dense_attention_supported();  // false before torch 2 (no scaled_dot_product_attention)
// q (batch, hq, tq, d); k, v (batch, hq, tk, d) (expand GQA heads beforehand with expand_kv_heads).
// causal: top-left aligned (torch's convention), i.e. for prefill with tq == tk.
at::Tensor dense_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                           DenseBackend backend);
// Decode (no mask: every query sees every key): GQA folded into rows, q (batch, hq, tq, d) with
// k, v (batch, hkv, tk, d) and no copy of K/V.
at::Tensor dense_decode(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, DenseBackend backend);
at::Tensor expand_kv_heads(const at::Tensor& kv, int64_t hq);

}  // namespace hipstudio::hip_torch
