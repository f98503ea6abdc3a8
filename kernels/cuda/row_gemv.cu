#include "kernels/cuda/row_gemv.h"

#include <algorithm>
#include <utility>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/once_per_key.h"

namespace hipstudio::gpu {

namespace {

// Layout of the work. A weight row is read in 16-byte chunks (8 bf16/f16, 4 f32); lane l of a warp
// takes chunks l, l + 32, ..., so each load instruction reads 512 contiguous bytes of a row.
// Bytes in flight are what a bandwidth-bound kernel needs (Little's law: ~3.35 TB/s x ~1.5 us of
// loaded latency ~ 5 MB on an H100, ~40 KB an SM): every lane issues kRowsPerWarp x kUnroll
// independent 16-byte loads before it uses any, and an SM holds 16 or more warps.
// Three layouts, chosen by shape (launch_options), from sweeps of warps a block (4-32), rows a warp
// (1/2/4) and loads in flight a row (2-16) on the H100 with kernels/cuda/probe/gemv_probe.cu
// (kernels/BENCHMARKS.md, "the projections' layouts by shape"). In the probe's chain of an 8B
// layer's four projections (a CUDA graph of 8 layers) they read the weights in 159 us a layer,
// against 168 us for the one layout before (8 warps x 2 rows x 8 loads):
//   stream: 16 warps of one row, 8 loads (output, gate/up, LM head);
//   pair:   8 warps of 2 rows, 4 loads (q/k/v: 21.7 against 23.1 us in the stream layout);
//   wide:   32 warps of one row, 4 loads (1024 threads: one block an SM, by the register file;
//           the grid follows the occupancy query either way), and the second batch of each warp's
//           first row sent toward the L2 at the start (the down projection after SwiGLU: 42.1
//           against 44.2 us; each block stages the 14336-wide activation once, and the prefetch
//           keeps HBM busy meanwhile; 159 us a layer in the chain). The same prefetch in the
//           other layouts, or of more batches, made the chain slower (160.4-168.5 us).
// The stream layout's knobs stay compile-time for the probe's sweeps (-D on the nvcc line).
#ifndef HIPSTUDIO_GEMV_WARPS
#define HIPSTUDIO_GEMV_WARPS 16
#endif
#ifndef HIPSTUDIO_GEMV_ROWS
#define HIPSTUDIO_GEMV_ROWS 1
#endif
#ifndef HIPSTUDIO_GEMV_UNROLL
#define HIPSTUDIO_GEMV_UNROLL 8
#endif
template <int W, int R, int U, int P = 0>
struct Layout {
  static constexpr int kWarps = W;
  static constexpr int kThreads = W * 32;
  static constexpr int kRowsPerWarp = R;  // rows sharing each read of x from shared memory
  static constexpr int kUnroll = U;       // chunks a lane loads per row before using them
  static constexpr int kRowsPerBlock = W * R;
  static constexpr int kPrefetch = P;     // batches after the first sent toward the L2 at the start
  static_assert(R >= 1 && R <= 32, "lane r writes row r of its warp's group");
  static_assert(W >= 1 && W * 32 <= 1024, "a block holds at most 1024 threads");
};
using StreamLayout = Layout<HIPSTUDIO_GEMV_WARPS, HIPSTUDIO_GEMV_ROWS, HIPSTUDIO_GEMV_UNROLL>;
using PairLayout = Layout<8, 2, 4>;
using WideLayout = Layout<32, 1, 4, 1>;

// Weights are read once and never again in this step: no L1 allocation (x lives in shared memory,
// nothing else here is reused), and the L2 fetches whole 256-byte pieces ahead of the warp.
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// A 16-byte chunk as floats: 8 bf16/f16 or 4 f32.
template <class T>
__device__ __forceinline__ void unpack(const uint4& v, float* f);
template <>
__device__ __forceinline__ void unpack<__nv_bfloat16>(const uint4& v, float* f) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 t = __bfloat1622float2(p[k]);
    f[2 * k] = t.x;
    f[2 * k + 1] = t.y;
  }
}
template <>
__device__ __forceinline__ void unpack<__half>(const uint4& v, float* f) {
  const __half2* p = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 t = __half22float2(p[k]);
    f[2 * k] = t.x;
    f[2 * k + 1] = t.y;
  }
}
template <>
__device__ __forceinline__ void unpack<float>(const uint4& v, float* f) {
  f[0] = __uint_as_float(v.x), f[1] = __uint_as_float(v.y), f[2] = __uint_as_float(v.z), f[3] = __uint_as_float(v.w);
}

// silu(g) = g / (1 + e^-g) in float32, as LibTorch evaluates it for bf16/f16 (expf, not __expf:
// x is staged once a block, so the accurate form costs nothing measurable).
__device__ __forceinline__ float silu(float g) { return g / (1.0f + expf(-g)); }

// The grid is as many blocks as the GPU holds at once (no more than the rows need), and each warp
// takes groups of kRowsPerWarp rows round-robin over all warps of the grid: every multiprocessor
// reads nearly the same number of weight bytes. With one block per 16 rows instead, the 4096-row projections made
// 256 blocks for 132 multiprocessors, half of which read twice as much as the rest: 71-77% of
// copy bandwidth there, against 95% for the 28672-row one (kernels/BENCHMARKS.md). Each block
// stages x in shared memory as float32 once (the silu_mul product computed there once a block, not
// once a weight element) in kParts planes of float4: plane p holds elements 4p..4p+3 of every
// chunk, so a warp reading chunk c = base + lane of one plane touches 512 consecutive bytes (no
// bank conflicts; a chunk's 32 bytes side by side would conflict two-way).
// The RoPE epilogue's arguments (RowGemvLaunch::rope), as the kernel takes them.
template <class T>
struct RopeArgs {
  const T* table = nullptr;
  const int64_t* position = nullptr;
  T *q = nullptr, *keys = nullptr, *values = nullptr;
  int64_t keys_head_stride = 0, keys_row_stride = 0, values_head_stride = 0, values_row_stride = 0;
  int n_heads = 0, n_kv_heads = 0, half = 0;  // half: head_dim / 2
};

// With the RoPE epilogue, row group p (two rows) is the rotation pair (i, i + head_dim / 2) of
// head p / half, i = p % half; without it, rows 2p and 2p + 1 (every layout: p R rows on).
template <bool kRope, int kRowsPerWarp>
__device__ __forceinline__ int group_row(int p, int r, int half) {
  if constexpr (kRope) {
    return (p / half) * 2 * half + p % half + r * half;
  } else {
    return p * kRowsPerWarp + r;
  }
}

// rope_cache.h's arithmetic for element i of a head, from the projection's float sums of the
// element and its partner (i + head_dim / 2 or i - head_dim / 2): both rounded to T as the
// projection's output is, x * cos rounded to T, then + partner * sin in float32, rounded once.
template <class T>
__device__ __forceinline__ T rotate_element(float self, float partner, float cos_i, float sin_i) {
  const float a = to_f32(from_f32<T>(to_f32(from_f32<T>(self)) * cos_i));
  return from_f32<T>(a + to_f32(from_f32<T>(partner)) * sin_i);
}

// kNorm: 0 none, 1 rms_norm(x), 2 rms_norm(x + norm_residual) (norm_sum written by block 0).
// kRope: the RoPE and cache write in the epilogue instead of y (RowGemvLaunch::rope, kRowsPerWarp 2).
template <class T, bool kSiluMul, bool kResidual, int kNorm, class L, bool kRope = false>
__global__ void __launch_bounds__(L::kThreads)
    row_gemv_kernel(const T* __restrict__ w, const T* __restrict__ x, const T* residual, T* y, int n, int in,
                    int64_t w_stride, const float* __restrict__ norm_weight, const T* __restrict__ norm_residual,
                    T* norm_sum, float eps, bool next_starts_early, const RopeArgs<T> rope) {
  static_assert(!kRope || L::kRowsPerWarp == 2, "the RoPE epilogue gives each warp a rotation's two rows");
  if (next_starts_early) let_next_grid_start();  // RowGemvLaunch::next_starts_early
  constexpr int kWarps = L::kWarps, kThreads = L::kThreads, kRowsPerWarp = L::kRowsPerWarp, kUnroll = L::kUnroll;
  constexpr int kElems = 16 / static_cast<int>(sizeof(T));
  constexpr int kParts = kElems / 4;
  extern __shared__ float4 xs[];  // (kParts, chunks)
  const int chunks = in / kElems;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int groups = (n + kRowsPerWarp - 1) / kRowsPerWarp;
  const int group_step = static_cast<int>(gridDim.x) * kWarps;
  int group = static_cast<int>(blockIdx.x) * kWarps + warp;

  int row0 = 0;
  const T* wr[kRowsPerWarp];
  bool valid[kRowsPerWarp];
  int rows[kRowsPerWarp];
  auto set_rows = [&](int p) {
    row0 = p * kRowsPerWarp;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      rows[r] = group_row<kRope, kRowsPerWarp>(p, r, rope.half);
      valid[r] = p < groups && rows[r] < n;
      wr[r] = w + static_cast<int64_t>(valid[r] ? rows[r] : 0) * w_stride;
    }
  };
  uint4 buf[kRowsPerWarp][kUnroll];
  auto load_batch = [&](int base) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = base + u * 32 + lane;
        buf[r][u] = valid[r] && c < chunks ? load_stream(wr[r] + static_cast<int64_t>(c) * kElems) : make_uint4(0, 0, 0, 0);
      }
    }
  };
  // The first weights are on their way while x is staged, and, launched as a programmatic dependent
  // (launch_typed), before the kernel that writes x and the residual has finished: the weights
  // depend on nothing, so only x, the residual and y wait for it.
  set_rows(group);
  load_batch(0);
  // The wide layout's next batches of lines toward the L2 (no registers held): HBM keeps streaming
  // while each block stages the wide SwiGLU activation.
#pragma unroll
  for (int b = 1; b <= L::kPrefetch; ++b) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = b * 32 * kUnroll + u * 32 + lane;
        if (valid[r] && c < chunks) prefetch_l2(wr[r] + static_cast<int64_t>(c) * kElems);
      }
    }
  }
  wait_for_prior_grid();
  // The RoPE epilogue's position (a device scalar, written before the step) and lane r's cos and
  // sin of its element (lanes 0 and 1: a group's two rows), loaded before the product so that
  // their latency hides under it.
  int64_t rope_pos = 0;
  float rope_cos = 0.f, rope_sin = 0.f;
  auto load_rotation = [&](int p) {
    if constexpr (kRope) {
      if (lane < 2 && p < groups) {
        const int i = p % rope.half + lane * rope.half;  // the element's index in its head
        const T* row = rope.table + rope_pos * 4 * rope.half;
        rope_cos = to_f32(row[i]), rope_sin = to_f32(row[2 * rope.half + i]);
      }
    }
  };
  if constexpr (kRope) {
    rope_pos = *rope.position;
    load_rotation(group);
  }

  const uint4* x16 = reinterpret_cast<const uint4*>(x);
  float squares = 0.0f;  // kNorm: this thread's part of the row's sum of squares
#pragma unroll 4
  for (int c = threadIdx.x; c < chunks; c += kThreads) {
    float f[kElems];
    unpack<T>(x16[c], f);
    if constexpr (kNorm == 2) {
      // The residual sum rounded to T before it is normalised, as row_norm's kernel and LibTorch's add do.
      float r[kElems];
      unpack<T>(reinterpret_cast<const uint4*>(norm_residual)[c], r);
      union {
        uint4 v;
        T e[kElems];
      } rounded;
#pragma unroll
      for (int k = 0; k < kElems; ++k) {
        rounded.e[k] = from_f32<T>(f[k] + r[k]);
        f[k] = to_f32(rounded.e[k]);
      }
      if (blockIdx.x == 0) reinterpret_cast<uint4*>(norm_sum)[c] = rounded.v;
    }
    if constexpr (kNorm != 0) {
#pragma unroll
      for (int k = 0; k < kElems; ++k) squares += f[k] * f[k];
    }
    if constexpr (kSiluMul) {
      float up[kElems];
      unpack<T>(x16[chunks + c], up);
#pragma unroll
      for (int k = 0; k < kElems; ++k) f[k] = silu(f[k]) * up[k];
    }
#pragma unroll
    for (int p = 0; p < kParts; ++p) xs[p * chunks + c] = make_float4(f[4 * p], f[4 * p + 1], f[4 * p + 2], f[4 * p + 3]);
  }
  if constexpr (kNorm != 0) {
    // The row's sum of squares (every block the same), then x * rsqrt(mean + eps) * weight rounded
    // to T in place, row_norm's formula and roundings. The squares are added in another order than
    // row_norm's (chunks of 8 a thread), so now and then an element differs from rms_norm()'s by one
    // unit in the last place of T.
    __shared__ float warp_squares[kWarps];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
    if (lane == 0) warp_squares[warp] = squares;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) total += warp_squares[i];
    const float scale = rsqrtf(total / static_cast<float>(in) + eps);
    for (int c = threadIdx.x; c < chunks; c += kThreads) {
#pragma unroll
      for (int p = 0; p < kParts; ++p) {
        float4 v = xs[p * chunks + c];
        const int e = c * kElems + 4 * p;  // element index of v.x
        const float4 g = make_float4(norm_weight[e], norm_weight[e + 1], norm_weight[e + 2], norm_weight[e + 3]);
        v.x = to_f32(from_f32<T>(v.x * scale * g.x));
        v.y = to_f32(from_f32<T>(v.y * scale * g.y));
        v.z = to_f32(from_f32<T>(v.z * scale * g.z));
        v.w = to_f32(from_f32<T>(v.w * scale * g.w));
        xs[p * chunks + c] = v;
      }
    }
  }
  __syncthreads();

  for (bool first = true; group < groups; group += group_step, first = false) {
    if (!first) {
      set_rows(group);
      load_batch(0);
      load_rotation(group);
    }
    float acc[kRowsPerWarp] = {};
    for (int base = 0; base < chunks; base += 32 * kUnroll) {
      if (base > 0) load_batch(base);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = base + u * 32 + lane;
        if (c >= chunks) break;
        float xf[kElems];
#pragma unroll
        for (int p = 0; p < kParts; ++p) {
          const float4 v = xs[p * chunks + c];
          xf[4 * p] = v.x, xf[4 * p + 1] = v.y, xf[4 * p + 2] = v.z, xf[4 * p + 3] = v.w;
        }
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          float wf[kElems];
          unpack<T>(buf[r][u], wf);
#pragma unroll
          for (int k = 0; k < kElems; ++k) acc[r] = fmaf(wf[k], xf[k], acc[r]);
        }
      }
    }

#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
    }
    // Lane r writes row r (every lane holds every row's sum after the butterfly).
    if constexpr (kRope) {
      // Lane r: row r of the pair, element i of head `head` (queries, then keys, then values).
      if (lane < 2 && (lane == 0 ? valid[0] : valid[1])) {
        const int head = rows[0] / (2 * rope.half), i = (lane == 0 ? rows[0] : rows[1]) - head * 2 * rope.half;
        const float self = lane == 0 ? acc[0] : acc[1], partner = lane == 0 ? acc[1] : acc[0];
        if (head >= rope.n_heads + rope.n_kv_heads) {  // a value: written as the projection rounds it
          const int64_t h = head - rope.n_heads - rope.n_kv_heads;
          rope.values[h * rope.values_head_stride + rope_pos * rope.values_row_stride + i] = from_f32<T>(self);
        } else {
          const T out = rotate_element<T>(self, partner, rope_cos, rope_sin);
          if (head < rope.n_heads) {
            rope.q[static_cast<int64_t>(head) * 2 * rope.half + i] = out;
          } else {
            rope.keys[(head - rope.n_heads) * rope.keys_head_stride + rope_pos * rope.keys_row_stride + i] = out;
          }
        }
      }
    } else {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        if (lane == r && valid[r]) {
          float v = acc[r];
          if constexpr (kResidual) v += to_f32(residual[row0 + r]);
          y[row0 + r] = from_f32<T>(v);
        }
      }
    }
  }
}

// Blocks one multiprocessor holds for a launch of `kernel` with `smem` bytes of shared memory,
// found once per kernel and size (host calls: the shared-memory limit, the occupancy calculation)
// rather than on every decode-step launch.
template <class L>
int resident_blocks(const void* kernel, size_t smem) {
  static OncePerKey<std::pair<const void*, size_t>, int> known;
  return known.get(std::make_pair(kernel, smem), [&] {
    // Shared memory (x) decides how many blocks an SM holds at large `in` (57 KB at the down
    // projection's 14336): ask for the largest shared part of L1, which the weights do not use.
    set_smem(kernel, smem, "row_gemv", /*max_shared_carveout=*/true);
    int blocks = 0;
    HIP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, L::kThreads, smem));
    return std::max(1, blocks);
  });
}

template <class T, bool kSiluMul, bool kResidual, int kNorm, class L, bool kRope = false>
void launch_typed(const RowGemvLaunch& l) {
  const auto kernel = row_gemv_kernel<T, kSiluMul, kResidual, kNorm, L, kRope>;
  RopeArgs<T> rope;
  if (l.rope) {
    const RopeCacheLaunch& r = *l.rope;
    rope.table = static_cast<const T*>(r.table), rope.position = r.position;
    rope.q = static_cast<T*>(r.q), rope.keys = static_cast<T*>(r.keys), rope.values = static_cast<T*>(r.values);
    rope.keys_head_stride = r.keys_head_stride, rope.keys_row_stride = r.keys_row_stride;
    rope.values_head_stride = r.values_head_stride, rope.values_row_stride = r.values_row_stride;
    rope.n_heads = static_cast<int>(r.n_heads), rope.n_kv_heads = static_cast<int>(r.n_kv_heads);
    rope.half = static_cast<int>(r.head_dim / 2);
  }
  const size_t smem = static_cast<size_t>(l.in) * sizeof(float);
  const int64_t needed = (l.n + L::kRowsPerBlock - 1) / L::kRowsPerBlock;
  const int64_t resident = static_cast<int64_t>(device_sm_count()) *
                           resident_blocks<L>(reinterpret_cast<const void*>(kernel), smem);
  const auto blocks = static_cast<unsigned>(std::max<int64_t>(1, std::min(needed, resident)));
  // On sm_90 the launch may start before the previous kernel has finished (programmatic dependent
  // launch): the launch latency and each projection's first weight loads overlap the end of the
  // small kernel before it (RMSNorm, RoPE, attention), a few microseconds a launch at batch 1.
  launch_after_prior(kernel, dim3(blocks), dim3(L::kThreads), smem, as_stream(l.stream), static_cast<const T*>(l.w),
                     static_cast<const T*>(l.x), static_cast<const T*>(l.residual), static_cast<T*>(l.y),
                     static_cast<int>(l.n), static_cast<int>(l.in),
                     static_cast<int64_t>(l.w_stride == 0 ? l.in : l.w_stride), l.norm_weight,
                     static_cast<const T*>(l.norm_residual), static_cast<T*>(l.norm_sum), static_cast<float>(l.eps),
                     l.next_starts_early, rope);
  HIP_CUDA_CHECK_LAUNCH("row_gemv");
}

// Every form but silu_mul's (the down projection, always in the wide layout).
template <class T, class L>
void launch_plain_or_normed(const RowGemvLaunch& l) {
  if (l.rope) {  // the decode step's q/k/v with the RoPE epilogue (pair layout: row_gemv_layout)
    if constexpr (L::kRowsPerWarp == 2) {
      l.norm_weight ? launch_typed<T, false, false, 1, L, true>(l) : launch_typed<T, false, false, 0, L, true>(l);
    } else {
      throw_arg("row_gemv: the RoPE epilogue needs a layout of two rows a warp");  // row_gemv_layout gives pair
    }
    return;
  }
  if (l.norm_weight) {  // the decode step's forms: q/k/v after the norm, gate/up after the add and norm
    l.norm_residual ? launch_typed<T, false, false, 2, L>(l) : launch_typed<T, false, false, 1, L>(l);
  } else {
    l.residual ? launch_typed<T, false, true, 0, L>(l) : launch_typed<T, false, false, 0, L>(l);
  }
}

template <class T>
void launch_options(const RowGemvLaunch& l) {
  switch (row_gemv_layout(l)) {
    case RowGemvLayout::kWide:
      l.residual ? launch_typed<T, true, true, 0, WideLayout>(l) : launch_typed<T, true, false, 0, WideLayout>(l);
      break;
    case RowGemvLayout::kPair: launch_plain_or_normed<T, PairLayout>(l); break;
    case RowGemvLayout::kStream: launch_plain_or_normed<T, StreamLayout>(l); break;
  }
}

}  // namespace

void row_gemv(const RowGemvLaunch& l) {
  const std::string refusal = row_gemv_refusal(l);
  if (!refusal.empty()) throw_arg(refusal);
  if (!l.y && !l.rope) throw_arg("row_gemv needs a y pointer");
  if (l.n == 0) return;
  switch (l.dtype) {
    case ElementType::kF32: launch_options<float>(l); break;
    case ElementType::kBF16: launch_options<__nv_bfloat16>(l); break;
    case ElementType::kF16: launch_options<__half>(l); break;
  }
}

}  // namespace hipstudio::gpu
