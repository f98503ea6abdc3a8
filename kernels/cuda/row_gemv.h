#pragma once
// y = W x for ONE input row: the projections of a batch-1 decode step (engine/model/layer_math.h) on
// CUDA. cuBLAS's bf16 gemv read the weights at ~85% of copy bandwidth; a decode step is nothing but
// weight reads, so this kernel is built for HBM bandwidth alone (16-byte loads, many in flight).
// Optionally fused around it, to save the decode step launches of a few microseconds each:
//   silu_mul: x holds 2 in entries [gate | up] and the product uses silu(gate) * up (float32), the
//             SwiGLU activation before the down projection;
//   residual: y = residual + W x, summed in float32 and rounded once (the add after the projection).
//   norm:     the product uses rms_norm(x) or rms_norm(x + norm_residual) (the RMSNorm before the
//             q/k/v and the gate/up projections), with row_norm.h's formula and roundings: the
//             sum rounded to the dtype (written to norm_sum), the normalised x rounded to the dtype
//             (its sum of squares added in another order: rarely one unit in the last place apart).
//             Every block normalises its own copy of x (a few KB read from L2): no launch of its own.
//   rope:     the product is a decode step's q/k/v row, and instead of writing it to y the kernel
//             does what rope_cache_write (rope_cache.h) does with it: the queries rotated into q, the
//             key rotated and the value written into the cache, same arithmetic and roundings. Each
//             warp computes a rotation's two rows (element i and i + head_dim / 2 of a head) and
//             rotates them in its epilogue: the RoPE kernel between the projection and the
//             attention, and its wait on the projection, are gone.
// Arithmetic: float32 throughout, the result rounded once to the dtype. Plain C++ interface (no
// CUDA headers), like row_norm.h.
#include <cstdint>

#include "kernels/cuda/hip_cuda.h"
#include "kernels/cuda/rope_cache.h"

namespace hipstudio::gpu {

struct RowGemvLaunch {
  // w is read before the previous kernel in the stream has finished (row_gemv.cu: programmatic
  // dependent launch): it must not be written by that kernel (model weights are not). y may be the
  // residual itself, not x.
  const void* w = nullptr;         // (n, in), rows w_stride elements apart (0: in), last dim contiguous
  const void* x = nullptr;         // (in), or (2 in) = [gate | up] with silu_mul; contiguous
  const void* residual = nullptr;  // optional (n) contiguous: y = residual + W x
  void* y = nullptr;               // (n) contiguous; may be residual itself
  ElementType dtype = ElementType::kF32;       // of w, x, residual and y alike
  int64_t n = 0, in = 0, w_stride = 0;
  bool silu_mul = false;
  // The norm (not with silu_mul): on when norm_weight is set.
  const float* norm_weight = nullptr;  // (in) float32
  const void* norm_residual = nullptr; // optional (in): the normalised row is x + norm_residual
  void* norm_sum = nullptr;            // with norm_residual: receives x + norm_residual (in); must
                                       // not overlap x, norm_residual or y (other blocks read them)
  double eps = 1e-5;
  void* stream = nullptr;          // cudaStream_t; null: the legacy default stream
  // Let the next kernel in the stream start at once (sm_90: griddepcontrol.launch_dependents before
  // anything else), its part before its own wait running beside this projection. Only where that
  // kernel waits for this one before it reads anything this one or its predecessors wrote, and
  // writes nothing before then that they read. The decode step sets it on every projection of a
  // layer (engine/model/layer_math.cpp): after the q/k/v projection comes the RoPE kernel
  // (rope_cache.h), which only waits and lets its own dependent start at once, so that HiP's mask
  // search or attention sets up, and the attention lays out its keys, while the projection ends
  // (kernels/BENCHMARKS_HISTORY.md); after the others comes another projection, whose part
  // before its wait reads only weights, so that a multiprocessor done with one projection's blocks
  // takes the next one's and starts its weight loads.
  bool next_starts_early = false;
  // The RoPE and cache write in the epilogue (above): its q, table, position, keys, values, their
  // strides, head counts and head_dim are used (its qkv, dtype and stream are this launch's: not
  // read). Then n must be (n_heads + 2 n_kv_heads) head_dim, y is not written (may be null), and
  // neither silu_mul nor a residual is taken; the norm is.
  const RopeCacheLaunch* rope = nullptr;
};

// Largest `in` the kernel takes: x is kept in shared memory as float32 (4 in bytes a block).
constexpr int64_t kRowGemvMaxIn = 32768;

// Why the kernel cannot take this shape and layout ("" when it can): the one check, used by row_gemv
// and by callers choosing between it and a library gemv (y need not be set yet). The weight rows and
// x are read 16 bytes at a time, so in must be a multiple of 8 and w, x and every row 16-byte aligned.
inline const char* row_gemv_refusal(const RowGemvLaunch& l) {
  const int64_t elem = l.dtype == ElementType::kF32 ? 4 : 2;
  const int64_t stride = l.w_stride == 0 ? l.in : l.w_stride;
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  // Whether two byte ranges share a byte (a null pointer: no range). Every block reads all of x (and
  // norm_residual) while others already write y (and block 0 norm_sum): those must not overlap.
  auto overlap = [](const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
    if (!a || !b) return false;
    const uintptr_t pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return pa < pb + static_cast<uintptr_t>(b_bytes) && pb < pa + static_cast<uintptr_t>(a_bytes);
  };
  const int64_t x_bytes = (l.silu_mul ? 2 : 1) * l.in * elem, y_bytes = l.n * elem, row_bytes = l.in * elem;
  if (!l.w || !l.x) return "row_gemv needs w and x pointers";
  if (l.rope) {
    const RopeCacheLaunch& r = *l.rope;
    if (l.silu_mul || l.residual || l.norm_residual)
      return "row_gemv: the RoPE epilogue takes neither silu_mul, a residual nor a norm residual";
    if (!r.table || !r.position || !r.q || !r.keys || !r.values) return "row_gemv: the RoPE epilogue needs every pointer";
    if (r.n_heads < 1 || r.n_kv_heads < 1 || r.head_dim < 2 || r.head_dim % 2 != 0 || r.head_dim > 1024 ||
        l.n != (r.n_heads + 2 * r.n_kv_heads) * r.head_dim)
      return "row_gemv: the RoPE epilogue needs n = (n_heads + 2 n_kv_heads) head_dim, head_dim even and <= 1024";
  }
  if (l.n < 0 || l.n > (int64_t{1} << 30)) return "row_gemv: n outside [0, 2^30]";  // block row indices stay in int
  if (l.in < 8 || l.in % 8 != 0 || l.in > kRowGemvMaxIn) return "row_gemv: in must be a multiple of 8 in [8, 32768]";
  if (stride < l.in || (stride * elem) % 16 != 0) return "row_gemv: weight rows must be >= in elements and 16-byte aligned apart";
  if (!aligned(l.w) || !aligned(l.x)) return "row_gemv: w and x must be 16-byte aligned";
  if (overlap(l.y, y_bytes, l.x, x_bytes)) return "row_gemv: y must not overlap x";
  if (l.rope && overlap(l.rope->q, l.rope->n_heads * l.rope->head_dim * elem, l.x, x_bytes))
    return "row_gemv: the rotated queries must not overlap x";
  if (l.norm_weight) {
    if (l.silu_mul || l.residual) return "row_gemv: a norm fuses with neither silu_mul nor a residual add";
    if (l.norm_residual && (!l.norm_sum || !aligned(l.norm_residual) || !aligned(l.norm_sum)))
      return "row_gemv: a norm residual needs a norm_sum, both 16-byte aligned";
    if (overlap(l.norm_sum, row_bytes, l.x, x_bytes) || overlap(l.norm_sum, row_bytes, l.norm_residual, row_bytes) ||
        overlap(l.norm_sum, row_bytes, l.y, y_bytes))
      return "row_gemv: norm_sum must not overlap x, norm_residual or y";
    if (overlap(l.y, y_bytes, l.norm_residual, row_bytes)) return "row_gemv: y must not overlap norm_residual";
  } else if (l.norm_residual || l.norm_sum) {
    return "row_gemv: norm_residual and norm_sum need a norm_weight";
  }
  return "";
}

// The kernel's work layout for a launch (kernels/cuda/row_gemv.cu, Layout: measured per shape on
// the H100): wide for the down projection (silu_mul), pair for q/k/v-like shapes (more rows than
// inputs, fewer than twice as many) and for the RoPE epilogue (a warp's two rows are a rotation's),
// stream elsewhere. The one rule, used by the launch and the tests.
enum class RowGemvLayout { kStream, kPair, kWide };
inline RowGemvLayout row_gemv_layout(const RowGemvLaunch& l) {
  if (l.silu_mul) return RowGemvLayout::kWide;
  if (l.rope) return RowGemvLayout::kPair;
  if (l.n > l.in && l.n < 2 * l.in) return RowGemvLayout::kPair;
  return RowGemvLayout::kStream;
}

// Validates (CudaError with row_gemv_refusal's reason, or for a missing y without rope) and launches.
void row_gemv(const RowGemvLaunch& launch);

}  // namespace hipstudio::gpu
