// Block-sparse HiP attention on the GPU (kernels/sparse_attention_reference.h is the CPU
// reference): every query attends sink + its query block's selected key blocks + the dense tail,
// keys beyond its visible end masked.
//
// Current version (v15, kernels/BENCHMARKS.md): tensor cores, bf16/f16, head dim padded to 64 or
// 128; one CTA of 4 warps per (batch, head, query block, tile of <= 64 rows, split), 3 CTAs per SM.
// Warps are (row group of 16 rows, key group) pairs: CTAs of > 32 rows give each warp its rows
// and every key, smaller ones (b_q 32, decode) split each tile's keys over 2 or 4 key groups whose
// partial rows are combined at the end. The CTA walks its key list (sink, then the selected blocks,
// then the dense tail) in tiles of 64 keys: the key ids and K/V row offsets two tiles ahead, K and V
// rows gathered by 16-byte cp.async into two shared-memory stages one tile ahead, S = Q K^T with
// mma.m16n8k16 from Q fragments held in registers and K fragments by ldmatrix, the per-key mask
// only on tiles that need it, online softmax in float32 in log2 units with a lazily moved running
// max, O += P V with P re-packed from the S accumulators and V's fragments read transposed by
// ldmatrix. Grid order: split, head within its KV group, row tile, query block (longest lists
// first), group. Decode (few rows, long KV) splits the key list over CTAs (`num_splits`, chosen to
// fill the GPU); the last CTA of a row tile to finish merges the partial (max, sum, O) rows.
// The float32 path (and any shape the tensor-core path does not take) is a SIMT kernel: one warp
// per query row, float32 dot products and online softmax. On sm_90 devices the unsplit launches
// of 64-row CTAs (prefill, b_q >= 64) go to the wgmma kernel (kernels/cuda/sm90a/, v18), which
// shares this file's key list, mask, softmax and store (kernels/cuda/attention_parts.cuh).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/cuda/attention_parts.cuh"
#include "kernels/cuda/attention_wgmma.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fast_div.h"
#include "kernels/cuda/once_per_key.h"

namespace hipstudio::gpu {
namespace {

// Merges the splits' partial rows of the CTA's row tile: out = sum_s 2^(m_s - M) O_s /
// sum_s 2^(m_s - M) l_s, one warp per row, 4 columns per lane. Partials written by other CTAs
// are read with ld.global.cg (L2, not this SM's possibly stale L1). `w`: this warp's kMaxSplits
// floats of shared memory for the splits' weights.
// The merge is the step's last work: its loads are issued together, one round trip to the L2
// (three dependent round trips, m, then l, then O, were slower). A
// lane keeps the l of the splits whose m it loaded, and where d <= 128 and splits <= kEarlySplits
// (a decode step's merge: 9 splits at 32k-128k, k 512) it loads its 4 columns of every split's O
// with them, in registers. The sums run in the same order as before: the same bits.
constexpr int kMaxSplits = 256;
constexpr int kEarlySplits = 16;
template <class T>
__device__ void merge_rows(const AttnArgs& a, const CtaCoords& c, float* w, int warp, int lane, int nwarps) {
  const int64_t base = (static_cast<int64_t>(c.b) * a.hq + c.h) * a.tq;
  const int d = a.d;
  T* obase = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h;
  const bool early = d <= 128 && a.splits <= kEarlySplits;
  const int col0 = lane * 4;
  for (int row = c.r0 + warp; row < c.r1; row += nwarps) {
    const int64_t r = base + row;
    float4 po[kEarlySplits];
    if (early && col0 < d) {
#pragma unroll
      for (int s = 0; s < kEarlySplits; ++s) {
        if (s < a.splits) po[s] = __ldcg(reinterpret_cast<const float4*>(a.part_o + (s * a.rows_total + r) * a.d + col0));
      }
    }
    float mmax = -INFINITY;
    float l_of[kMaxSplits / 32];  // l of split lane + 32 j
#pragma unroll
    for (int j = 0; j < kMaxSplits / 32; ++j) {
      const int s = lane + 32 * j;
      if (s >= a.splits) break;
      const float2 ml = __ldcg(reinterpret_cast<const float2*>(a.part_ml + 2 * (s * a.rows_total + r)));
      w[s] = ml.x;
      l_of[j] = ml.y;
      mmax = fmaxf(mmax, ml.x);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mmax = fmaxf(mmax, __shfl_xor_sync(0xffffffffu, mmax, o));
    const float mu = mmax == -INFINITY ? 0.f : mmax;
    float lsum = 0.f;
#pragma unroll
    for (int j = 0; j < kMaxSplits / 32; ++j) {
      const int s = lane + 32 * j;
      if (s >= a.splits) break;
      const float m = w[s];
      const float ws = m == -INFINITY ? 0.f : exp2f(m - mu);
      lsum += ws * l_of[j];
      w[s] = ws;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) lsum += __shfl_xor_sync(0xffffffffu, lsum, o);
    __syncwarp();
    const float inv_l = lsum > 0.f ? 1.f / lsum : 0.f;
    for (int col = col0; col < d; col += 128) {
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      if (early) {
#pragma unroll
        for (int s = 0; s < kEarlySplits; ++s) {
          if (s >= a.splits) break;
          const float ws = w[s];
          acc.x += ws * po[s].x, acc.y += ws * po[s].y, acc.z += ws * po[s].z, acc.w += ws * po[s].w;
        }
      } else {
#pragma unroll 4
        for (int s = 0; s < a.splits; ++s) {
          const float ws = w[s];
          const float4 p = __ldcg(reinterpret_cast<const float4*>(a.part_o + (s * a.rows_total + r) * a.d + col));
          acc.x += ws * p.x, acc.y += ws * p.y, acc.z += ws * p.z, acc.w += ws * p.w;
        }
      }
      T* orow = obase + row * a.os.t + col;
      *reinterpret_cast<uint32_t*>(orow) = pack2<T>(acc.x * inv_l, acc.y * inv_l);
      *reinterpret_cast<uint32_t*>(orow + 2) = pack2<T>(acc.z * inv_l, acc.w * inv_l);
    }
    __syncwarp();  // w is rewritten for the warp's next row
  }
}

// The split merge inside a thread-block cluster (AttnArgs::cluster_merge): each
// split's CTA leaves its partial rows in its own shared memory, one cluster barrier, and split 0
// reads them all through distributed shared memory and merges them as merge_rows does (same
// operations in the same order: the same bits), then a second barrier keeps the others' memory
// alive until it has read. In place of the workspace stores, the counter's acquire-release atomic
// and the L2 loads of the last CTA: a decode step's merge at the end of every sparse layer.
constexpr int kClusterMaxSplits = 16;  // the largest cluster sm_90 launches (non-portable above 8)

__device__ __forceinline__ void cluster_sync_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// p's counterpart in the shared memory of cluster CTA `rank`.
__device__ __forceinline__ unsigned cluster_address(const void* p, unsigned rank) {
  unsigned remote = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
#endif
  return remote;
}
__device__ __forceinline__ float4 load_cluster_f4(unsigned addr) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
#endif
  return v;
}
__device__ __forceinline__ float2 load_cluster_f2(unsigned addr) {
  float2 v = make_float2(0.f, 0.f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
#endif
  return v;
}

// Split 0's merge of the rows [c.r0, c.r1): `mine_o` (rows x D) and `mine_ml` (rows x 2: m, l) hold
// each CTA's partial at the same offsets. Every CTA of the cluster calls it (the barriers).
template <class T, int D>
__device__ void cluster_merge_rows(const AttnArgs& a, const CtaCoords& c, const float* mine_o, const float* mine_ml,
                                   int warp, int lane, int nwarps) {
  cluster_sync_all();  // every split's partial is in its CTA's shared memory
  if (c.split == 0) {
    T* obase = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h;
    const int col = lane * 4;
    for (int lr = warp; lr < c.r1 - c.r0; lr += nwarps) {
      // All of the row's remote loads at once: lane s < splits takes split s's (m, l), every lane
      // its 4 columns of each split's O.
      float4 po[kClusterMaxSplits];
#pragma unroll
      for (int s = 0; s < kClusterMaxSplits; ++s) {
        if (s < a.splits && col < D) po[s] = load_cluster_f4(cluster_address(mine_o + lr * D + col, s));
      }
      const float2 ml = lane < a.splits ? load_cluster_f2(cluster_address(mine_ml + 2 * lr, lane))
                                        : make_float2(-INFINITY, 0.f);
      float mmax = ml.x;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mmax = fmaxf(mmax, __shfl_xor_sync(0xffffffffu, mmax, o));
      const float mu = mmax == -INFINITY ? 0.f : mmax;
      const float ws = lane >= a.splits || ml.x == -INFINITY ? 0.f : exp2f(ml.x - mu);
      float lsum = 0.f;
      lsum += ws * ml.y;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) lsum += __shfl_xor_sync(0xffffffffu, lsum, o);
      const float inv_l = lsum > 0.f ? 1.f / lsum : 0.f;
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int s = 0; s < kClusterMaxSplits; ++s) {
        if (s >= a.splits) break;
        const float w = __shfl_sync(0xffffffffu, ws, s);
        acc.x += w * po[s].x, acc.y += w * po[s].y, acc.z += w * po[s].z, acc.w += w * po[s].w;
      }
      if (col < D && col < a.d) {
        T* orow = obase + (c.r0 + lr) * a.os.t + col;
        *reinterpret_cast<uint32_t*>(orow) = pack2<T>(acc.x * inv_l, acc.y * inv_l);
        *reinterpret_cast<uint32_t*>(orow + 2) = pack2<T>(acc.z * inv_l, acc.w * inv_l);
      }
    }
  }
  __syncwarp();        // split 0's lanes took their own paths above; the barrier is .aligned
  cluster_sync_all();  // split 0 has read the others' shared memory: they may exit
}

// Folds another partial (m, l, O) of the same rows into this one: both scaled to the larger max.
template <int NT>
__device__ __forceinline__ void fold_partial(float& m, float& l, float (*o)[4], int x0, float mw, float lw,
                                             const float* ow, int ow_stride) {
  const float mn = fmaxf(m, mw);
  const float self = mn == -INFINITY ? 0.f : fast_exp2(m - mn), other = mn == -INFINITY ? 0.f : fast_exp2(mw - mn);
  m = mn;
  l = l * self + lw * other;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    o[t][x0] = o[t][x0] * self + ow[(t * 4 + x0) * ow_stride] * other;
    o[t][x0 + 1] = o[t][x0 + 1] * self + ow[(t * 4 + x0 + 1) * ow_stride] * other;
  }
}


template <int D>
__host__ __device__ constexpr size_t mma_smem_bytes() {  // two stages of K and V tiles (row-major, rows padded by 16 bytes) + key slots
  return 2 * (2 * static_cast<size_t>(kBK) * (D + 8) * 2) + kKeySlots * kBK * sizeof(TileKey);
}

// Resident CTAs per SM the register budget is sized for (shared memory allows 3 at d 128), and
// the keys one softmax step scores. Compile-time knobs so that scripts/dev/device_variants.sh
// can measure other settings without editing the source.
#ifndef HIPSTUDIO_ATTN_MIN_CTAS
#define HIPSTUDIO_ATTN_MIN_CTAS 3
#endif
#ifndef HIPSTUDIO_ATTN_CHUNK
#define HIPSTUDIO_ATTN_CHUNK 32
#endif
// Decode CTAs (KG 4) stay at 3 per SM: a 128k batch-1 step has 288 of them, one wave at 3.
template <int D, int KG>
constexpr int kMinCtasPerSm = KG == 4 ? 3 : D > 64 ? HIPSTUDIO_ATTN_MIN_CTAS : HIPSTUDIO_ATTN_MIN_CTAS + 1;

// Warps are (row group, key group) pairs. KG == 1 (CTAs of > 32 rows): warp w owns query rows
// [16w, 16w + 16) and scores every key of a tile. KG == 2 (17..32 rows) and KG == 4 (<= 16 rows,
// i.e. decode): 4 warps, 4 / KG row groups of 16 rows, each warp scoring its key group's
// kBK / KG keys of every tile (v15: CTAs of 32 rows ran 2 warps, 6 per SM); the key groups'
// partial (m, l, O) are combined through shared memory at the end. PerSeq: the launch may carry
// per-sequence key counts and starts (keys_of); false only where it carries none.
template <class T, int D, int KG, bool PerSeq>
__global__ void __launch_bounds__(128, (kMinCtasPerSm<D, KG>)) sparse_attention_mma(const AttnArgs a) {
  constexpr int LD = D + 8;  // +16 bytes: the 8 rows of an ldmatrix hit distinct banks
  constexpr int KS = D / 16;  // k-steps of Q K^T
  constexpr int NT = D / 8;   // n-tiles of O
  constexpr int kVecs = D / 8;
  constexpr int RG = KG == 1 ? 4 : 4 / KG;  // row groups (at most)
  constexpr int kWarpKeys = kBK / KG;        // keys of each tile this warp scores
  // Keys scored per softmax step: 32 keep S at 16 registers, so that 3 CTAs of 128 threads fit
  // without spills at d 128.
  constexpr int kChunk = kWarpKeys < HIPSTUDIO_ATTN_CHUNK ? kWarpKeys : HIPSTUDIO_ATTN_CHUNK;
  constexpr int kSTiles = kChunk / 8;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  T* sk_all = reinterpret_cast<T*>(smem_raw);               // [2][kBK][LD]
  T* sv_all = sk_all + 2 * kBK * LD;                         // [2][kBK][LD]
  TileKey* skey_all = reinterpret_cast<TileKey*>(sv_all + 2 * kBK * LD);  // [kKeySlots][kBK]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gq = lane >> 2, cq = lane & 3;
  const CtaCoords c = cta_coords(a);
  if (c.r0 >= c.r1) return;
  const int g = c.h / (a.hq / a.hkv);
  const int d = a.d;
  // The first key ids need the block list (v14: started toward L1 at once); with fixed slots
  // (splits > 1) they no longer wait for the item's count.
  const int32_t* item_blocks = a.blocks + static_cast<int64_t>(c.item) * a.kb;
  if (tid * 32 < a.kb) prefetch_l1(item_blocks + tid * 32);
  int e_lo, e_hi;
  row_ends<PerSeq>(a, c.b, c.r0, c.r1, e_lo, e_hi);
  const KeyList<int> kl = key_list<int, PerSeq>(a, c, e_hi, a.splits > 1);
  const int tiles = (kl.total + kBK - 1) / kBK;
  const int t_begin = tiles * c.split / a.splits, t_end = tiles * (c.split + 1) / a.splits;

  // This thread's two rows and their visible ends (-1: padding row, everything masked).
  const int rg = warp % RG, kg = warp / RG;
  const int rows_base = c.r0 + rg * 16;
  const int row0 = rows_base + gq, row1 = row0 + 8;
  const int e0 = row0 < c.r1 ? visible_end<PerSeq>(a, c.b, row0) : -1;
  const int e1 = row1 < c.r1 ? visible_end<PerSeq>(a, c.b, row1) : -1;
  // Prefill warps past the CTA's rows only help with the copies.
  const bool computes = rg * 16 < c.r1 - c.r0;
  const int kw0 = kg * kWarpKeys;  // this warp's first key of a tile

  float o[NT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

  const T* kbase = static_cast<const T*>(a.k) + kv_offset<PerSeq>(a, a.ks, c.b) + g * a.ks.h;
  const T* vbase = static_cast<const T*>(a.v) + kv_offset<PerSeq>(a, a.vs, c.b) + g * a.vs.h;
  // Each thread copies one 16-byte column piece of every kCopyStep-th row of a tile.
  constexpr int kCopyStep = kThreads / kVecs;
  const int copy_col = (tid % kVecs) * 8, copy_row0 = tid / kVecs;
  const uint4* kcol = reinterpret_cast<const uint4*>(kbase + copy_col);
  const uint4* vcol = reinterpret_cast<const uint4*>(vbase + copy_col);
  const bool copy_col_ok = copy_col < d;
  const unsigned k_row16 = static_cast<unsigned>(a.ks.t / 8), v_row16 = static_cast<unsigned>(a.vs.t / 8);
  // Key slot `slot` of tile `tile`: the keys and their K and V row offsets, computed once per key
  // (not once per copied piece) from the block id `blk` loaded a tile earlier; returns, to every
  // thread, whether any key of the tile is empty or beyond the first row's visible end (only then
  // does the tile need the per-key mask).
  auto key_ids = [&](int tile, int slot, int blk) -> bool {
    return put_tile_keys(skey_all + slot * kBK, kl, tile, blk, tid, k_row16, v_row16, e_lo);
  };
  auto block_of = [&](int tile) -> int { return tid < kBK ? kl.block_of(tile * kBK + tid) : 0; };
  // K and V rows by cp.async, zero-filled where no key, for the rows whose key `copy_now(key)` takes.
  auto copy_rows = [&](int stage, int slot, auto copy_now) {
    const TileKey* sks = skey_all + slot * kBK;
    T* sk = sk_all + stage * kBK * LD + copy_col;
    T* sv = sv_all + stage * kBK * LD + copy_col;
#pragma unroll
    for (int j = copy_row0, i = 0; i < kBK / kCopyStep; ++i, j += kCopyStep) {
      const TileKey tk = sks[j];
      if (!copy_now(tk.key)) continue;
      const bool valid = tk.key >= 0 && copy_col_ok;
      cp_async16(sk + j * LD, kcol + tk.k_off, valid);
      cp_async16(sv + j * LD, vcol + tk.v_off, valid);
    }
  };
  auto issue = [&](int stage, int slot) {  // every row of a tile, one commit group
    copy_rows(stage, slot, [](int) { return true; });
    cp_async_commit();
  };
  // Pipeline (attention_parts.cuh), two barriers a tile: key ids two tiles ahead, K/V copies one.
  const int n_tiles = t_end - t_begin;
  bool masked_cur = false, masked_next = false;
  // Decode CTAs (<= 16 rows, KG == 4) launched as a programmatic dependent (a.overlap_prior): the
  // key ids and the first tile's rows of keys before the first row's position (empty slots too)
  // are on their way while the kernel before, which writes Q and the keys at the query positions,
  // ends; the other rows after it. Every other launch copies the tile whole, as always.
  const bool split_first_tile = KG == 4 && a.overlap_prior;
  const int fresh = e_lo;
  if (n_tiles > 0) {
    masked_cur = key_ids(t_begin, 0, block_of(t_begin));
    if (split_first_tile) copy_rows(0, 0, [fresh](int key) { return key < fresh; });
  }
  if constexpr (KG == 4) wait_for_prior_grid();  // a no-op in a plain launch
  if (n_tiles > 0) {
    if (split_first_tile) {
      copy_rows(0, 0, [fresh](int key) { return key >= fresh; });
      cp_async_commit();
    } else {
      issue(0, 0);
    }
    if (n_tiles > 1) masked_next = key_ids(t_begin + 1, 1, block_of(t_begin + 1));
  }
  // Q fragments, loaded once (zero for padding rows and columns), after the first tile's gather
  // is on its way: the two latencies overlap (v15; decode CTAs compute a single tile).
  const bool q0ok = row0 < c.r1, q1ok = row1 < c.r1;
  uint32_t qf[KS][4];
  load_q_fragments<T, KS>(qf, a, c, row0, row1, q0ok, q1ok, d, cq);

  for (int i = 0; i < n_tiles; ++i) {
    const int stage = i & 1, slot = i % kKeySlots;
    await_tile(i, n_tiles, issue);
    const int blk2 = i + 2 < n_tiles ? block_of(t_begin + i + 2) : 0;  // in flight during the math
    __syncthreads();  // every thread's copies of this tile landed
    const T* sk = sk_all + stage * kBK * LD;
    const T* sv = sv_all + stage * kBK * LD;
    const TileKey* skey = skey_all + slot * kBK;
    if (computes) {
#pragma unroll 1
      for (int kc = kw0; kc < kw0 + kWarpKeys; kc += kChunk) {
      // S = Q K^T for this warp's 16 rows x kChunk keys, k-step outermost so that consecutive
      // mma go to different accumulators; K's B fragments by ldmatrix (four 8x8 matrices: two
      // n-tiles, one k-step).
      float s[kSTiles][4];
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
      const T* krow = sk + (kc + (lane >> 4) * 8 + (lane & 7)) * LD + ((lane >> 3) & 1) * 8;
      // Fragments double-buffered: the next ldmatrix is issued before this one's mma (v15: the
      // mma waited on shared-memory latency right after each load).
      constexpr int kKSteps = KS * (kSTiles / 2);
      uint32_t kf[2][4];
      ldmatrix_x4(kf[0], krow);
#pragma unroll
      for (int x = 0; x < kKSteps; ++x) {
        const int ks = x / (kSTiles / 2), nt = 2 * (x % (kSTiles / 2));
        if (x + 1 < kKSteps) {
          const int ks1 = (x + 1) / (kSTiles / 2), nt1 = 2 * ((x + 1) % (kSTiles / 2));
          ldmatrix_x4(kf[(x + 1) & 1], krow + nt1 * 8 * LD + ks1 * 16);
        }
        mma16816<T>(s[nt], qf[ks], kf[x & 1]);
        mma16816<T>(s[nt + 1], qf[ks], kf[x & 1] + 2);
      }
      if (a.cap_out != 0.f) cap_chunk<kSTiles>(s, a.cap_in, a.cap_out);
      if (masked_cur) mask_chunk<kSTiles>(s, skey, kc, cq, e0, e1);  // empty entries, keys past a row's end
      softmax_chunk<kSTiles, NT>(s, o, m0, m1, l0, l1, a.scale_log2);
      // O += P V: P's accumulator layout is the A fragment layout of the next mma; V's B
      // fragments come transposed out of the row-major tile by ldmatrix (two n-tiles per call).
      uint32_t pf[kChunk / 16][4];
      pack_p<T, kSTiles>(s, pf);
      const T* vrow = sv + (kc + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + (lane >> 4) * 8;
      constexpr int kVSteps = (kChunk / 16) * (NT / 2);
      uint32_t vf[2][4];
      ldmatrix_x4_trans(vf[0], vrow);
#pragma unroll
      for (int x = 0; x < kVSteps; ++x) {
        const int kk = x / (NT / 2), t = 2 * (x % (NT / 2));
        if (x + 1 < kVSteps) {
          const int kk1 = (x + 1) / (NT / 2), t1 = 2 * ((x + 1) % (NT / 2));
          ldmatrix_x4_trans(vf[(x + 1) & 1], vrow + kk1 * 16 * LD + t1 * 8);
        }
        mma16816<T>(o[t], pf[kk], vf[x & 1]);
        mma16816<T>(o[t + 1], pf[kk], vf[x & 1] + 2);
      }
      }
    }
    finish_tile(i, n_tiles, t_begin, blk2, key_ids, masked_cur, masked_next);
  }

  if constexpr (KG == 2) {
    // Key group 1 hands its partial rows to key group 0 of its row group through the (now idle)
    // tile memory, in fragment order so that each lane reads back exactly what it folds.
    constexpr int kPer = NT * 4 + 4;
    float* red = reinterpret_cast<float*>(smem_raw);  // [RG][kPer][32]
    __syncthreads();  // the tiles are no longer read (the last two iterations had no closing barrier)
    if (kg == 1) {
      float* r = red + rg * kPer * 32 + lane;
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int x = 0; x < 4; ++x) r[(t * 4 + x) * 32] = o[t][x];
      r[(NT * 4) * 32] = m0, r[(NT * 4 + 1) * 32] = m1, r[(NT * 4 + 2) * 32] = l0, r[(NT * 4 + 3) * 32] = l1;
    }
    __syncthreads();
    if (kg == 0) {
      const float* r = red + rg * kPer * 32 + lane;
      fold_partial<NT>(m0, l0, o, 0, r[(NT * 4) * 32], r[(NT * 4 + 2) * 32], r, 32);
      fold_partial<NT>(m1, l1, o, 2, r[(NT * 4 + 1) * 32], r[(NT * 4 + 3) * 32], r, 32);
    }
  }
  l0 = row_sum(l0), l1 = row_sum(l1);
  const int64_t base = (static_cast<int64_t>(c.b) * a.hq + c.h) * a.tq;
  const int64_t split_off = static_cast<int64_t>(c.split) * a.rows_total;
  if constexpr (KG <= 2) {  // key group 0 holds the rows in fragments
    if (kg != 0) {
      if (a.splits == 1) return;
    } else if (a.splits == 1) {
      store_rows<T, NT>(a, c, o, l0, l1, row0, row1, q0ok, q1ok, d, cq);
      return;
    }
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int row = x ? row1 : row0;
      if (kg != 0 || row >= c.r1) continue;
      const int64_t r = split_off + base + row;
      float* po = a.part_o + r * a.d;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const int col = t * 8 + cq * 2;
        if (col >= d) continue;
        *reinterpret_cast<float2*>(po + col) = make_float2(o[t][2 * x], o[t][2 * x + 1]);
      }
      if (cq == 0) *reinterpret_cast<float2*>(a.part_ml + 2 * r) = make_float2(x ? m1 : m0, x ? l1 : l0);
    }
  } else {
    // KG 4 (decode): the key groups' partial rows go to the (now idle) tile memory, row-major;
    // then all 128 threads finish (row, column) pairs together (v15: key group 0 used to fold the
    // three others alone, in fragment order, while the other warps waited).
    constexpr int kRows = RG * 16;
    float* red_o = reinterpret_cast<float*>(smem_raw);  // [KG][kRows][D]
    float* red_ml = red_o + KG * kRows * D;             // [KG][kRows][2]: m, l
    float* mine_o = red_ml + KG * kRows * 2;            // [kRows][D]: the cluster merge's partial
    float* mine_ml = mine_o + kRows * D;                // [kRows][2]
    static_assert((KG * kRows * (D + 2) + kRows * (D + 2)) * sizeof(float) <= mma_smem_bytes<D>(),
                  "the fold's and the cluster merge's buffers fit in the tile memory");
    __syncthreads();  // the tiles are no longer read (the last two iterations had no closing barrier)
    if (computes) {
      const int lr0 = rg * 16 + gq, lr1 = lr0 + 8;
      float* o0 = red_o + (kg * kRows + lr0) * D + cq * 2;
      float* o1 = red_o + (kg * kRows + lr1) * D + cq * 2;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (q0ok) *reinterpret_cast<float2*>(o0 + t * 8) = make_float2(o[t][0], o[t][1]);
        if (q1ok) *reinterpret_cast<float2*>(o1 + t * 8) = make_float2(o[t][2], o[t][3]);
      }
      if (cq == 0 && q0ok) *reinterpret_cast<float2*>(red_ml + 2 * (kg * kRows + lr0)) = make_float2(m0, l0);
      if (cq == 0 && q1ok) *reinterpret_cast<float2*>(red_ml + 2 * (kg * kRows + lr1)) = make_float2(m1, l1);
    }
    __syncthreads();
    T* obase = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h;
    const int nrows = c.r1 - c.r0;
    constexpr int kQuads = D / 4;  // 4 columns per thread and step: 16-byte shared loads
    for (int e = tid; e < nrows * kQuads; e += kThreads) {
      const int lr = e / kQuads, col = (e % kQuads) * 4;
      if (col >= d) continue;  // d % 8 == 0: the 4 columns are all inside or all outside
      float mx = -INFINITY;
#pragma unroll
      for (int g2 = 0; g2 < KG; ++g2) mx = fmaxf(mx, red_ml[2 * (g2 * kRows + lr)]);
      const float mu = mx == -INFINITY ? 0.f : mx;
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      float lsum = 0.f;
#pragma unroll
      for (int g2 = 0; g2 < KG; ++g2) {
        const float2 ml = *reinterpret_cast<const float2*>(red_ml + 2 * (g2 * kRows + lr));
        const float w = ml.x == -INFINITY ? 0.f : fast_exp2(ml.x - mu);
        const float4 ov = *reinterpret_cast<const float4*>(red_o + (g2 * kRows + lr) * D + col);
        acc.x += w * ov.x, acc.y += w * ov.y, acc.z += w * ov.z, acc.w += w * ov.w;
        lsum += w * ml.y;
      }
      const int row = c.r0 + lr;
      if (a.splits == 1) {
        const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
        T* orow = obase + static_cast<int64_t>(row) * a.os.t + col;
        *reinterpret_cast<uint32_t*>(orow) = pack2<T>(acc.x * inv, acc.y * inv);
        *reinterpret_cast<uint32_t*>(orow + 2) = pack2<T>(acc.z * inv, acc.w * inv);
      } else if (a.cluster_merge) {  // this CTA's partial stays here, behind the fold's buffers
        *reinterpret_cast<float4*>(mine_o + lr * D + col) = acc;
        if (col == 0) *reinterpret_cast<float2*>(mine_ml + 2 * lr) = make_float2(mx, lsum);
      } else {
        const int64_t r = split_off + base + row;
        *reinterpret_cast<float4*>(a.part_o + r * a.d + col) = acc;
        if (col == 0) *reinterpret_cast<float2*>(a.part_ml + 2 * r) = make_float2(mx, lsum);
      }
    }
    if (a.splits == 1) return;
    if (a.cluster_merge) {
      __syncthreads();  // the CTA's partial is complete before the cluster barrier releases it
      cluster_merge_rows<T, D>(a, c, mine_o, mine_ml, warp, lane, kThreads / 32);
      return;
    }
  }
  {
    // The last CTA of this row tile to finish merges all splits' partials. The barrier orders
    // every thread's partial stores before thread 0's count; its acq_rel atomic releases them to
    // the other CTAs (cumulatively, through the barrier) and, in the last CTA, acquires theirs;
    // the second barrier hands that on to the CTA's other threads (v15: one fence per CTA instead
    // of one per thread before and after the count). The last CTA resets the counter.
    __shared__ unsigned last;
    __syncthreads();
    if (tid == 0) {
      unsigned* done = a.done + a.by_splits.div(blockIdx.x);
      const unsigned prev = atomic_add_acq_rel_gpu(done, 1u);
      last = prev + 1 == static_cast<unsigned>(a.splits);
      if (last) *done = 0u;
    }
    __syncthreads();
    if (!last) return;
    merge_rows<T>(a, c, reinterpret_cast<float*>(smem_raw) + warp * kMaxSplits, warp, lane, kThreads / 32);
  }
}

// SIMT path: one warp per query row, lane-strided dims (d <= 512), float32 throughout.
template <class T>
__global__ void __launch_bounds__(128) sparse_attention_simt(const AttnArgs a) {
  constexpr int kMaxPerLane = 16;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const CtaCoords c = cta_coords(a);
  const int64_t g = c.h / (a.hq / a.hkv);
  const int d = a.d;
  const float scale = a.scale_log2;
  const T* kbase = static_cast<const T*>(a.k) + kv_offset(a, a.ks, c.b) + g * a.ks.h;
  const T* vbase = static_cast<const T*>(a.v) + kv_offset(a, a.vs, c.b) + g * a.vs.h;
  for (int64_t row = c.r0 + warp; row < c.r1; row += nwarps) {
    const int64_t e = dev_visible_end(a.positions, a.tq, keys_of(a, c.b), a.hip.causal, row);
    const KeyList<int64_t> kl = key_list<int64_t>(a, c, e, false);
    const T* qrow = static_cast<const T*>(a.q) + c.b * a.qs.b + c.h * a.qs.h + row * a.qs.t;
    float qv[kMaxPerLane], acc[kMaxPerLane];
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int col = lane + 32 * i;
      qv[i] = col < d ? to_f32(qrow[col]) : 0.f;
      acc[i] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int64_t j = 0; j < kl.total; ++j) {
      const int64_t key = kl.key(j);
      if (key < 0 || key > e) continue;
      const T* kr = kbase + key * a.ks.t;
      float dot = 0.f;
#pragma unroll
      for (int i = 0; i < kMaxPerLane; ++i) {
        const int col = lane + 32 * i;
        if (col < d) dot = fmaf(qv[i], to_f32(kr[col]), dot);
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      const float sc = a.cap_out != 0.f ? tanhf(dot * a.cap_in) * a.cap_out : dot * scale;
      const float mn = fmaxf(m, sc);
      const float al = exp2f(m - mn), p = exp2f(sc - mn);
      l = l * al + p;
      const T* vr = vbase + key * a.vs.t;
#pragma unroll
      for (int i = 0; i < kMaxPerLane; ++i) {
        const int col = lane + 32 * i;
        if (col < d) acc[i] = acc[i] * al + p * to_f32(vr[col]);
      }
      m = mn;
    }
    T* orow = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h + row * a.os.t;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int col = lane + 32 * i;
      if (col < d) orow[col] = from_f32<T>(l > 0.f ? acc[i] / l : 0.f);
    }
  }
}

bool aligned(const void* p, int bytes) { return (reinterpret_cast<uintptr_t>(p) % bytes) == 0; }

bool mma_path(const AttentionLaunch& l) {
  if (l.dtype == ElementType::kF32 || l.d > 128 || l.d % 8 != 0) return false;
  // 32-bit keys and K/V row offsets in 16-byte units inside the kernel (v15); longer caches take
  // the SIMT path.
  constexpr int64_t kMaxKey = int64_t{1} << 30, kMaxOffset16 = int64_t{1} << 32;
  const int64_t row_stride = std::max(l.k_stride.t, l.v_stride.t);
  if (l.tk >= kMaxKey || row_stride >= kMaxKey || l.tk * (row_stride / 8) >= kMaxOffset16) return false;
  const bool kv16 = aligned(l.k, 16) && aligned(l.v, 16) && l.k_stride.t % 8 == 0 && l.k_stride.h % 8 == 0 &&
                    l.k_stride.b % 8 == 0 && l.v_stride.t % 8 == 0 && l.v_stride.h % 8 == 0 && l.v_stride.b % 8 == 0;
  const bool qo4 = aligned(l.q, 4) && aligned(l.out, 4) && l.q_stride.t % 2 == 0 && l.q_stride.h % 2 == 0 &&
                   l.q_stride.b % 2 == 0 && l.out_stride.t % 2 == 0 && l.out_stride.h % 2 == 0 &&
                   l.out_stride.b % 2 == 0;
  return kv16 && qo4;
}

void check_launch(const AttentionLaunch& l) {
  check_hip_params(l.hip);
  if (!l.q || !l.k || !l.v || !l.out || !l.blocks || !l.counts)
    throw_arg("sparse attention needs Q, K, V, out, blocks and counts pointers");
  if (l.batch < 1 || l.hq < 1 || l.hkv < 1 || l.tq < 1 || l.tk < 1 || l.d < 1)
    throw_arg("sparse attention needs batch, heads, queries, keys and d >= 1");
  if (l.hq % l.hkv != 0) throw_arg("query heads must be a multiple of KV heads");
  if (!l.positions && l.tq > l.tk) throw_arg("tq > tk needs explicit positions");
  if (l.key_counts && l.positions) throw_arg("per-sequence key counts place the queries themselves: pass no positions");
  if (l.key_starts && !l.key_counts) throw_arg("per-sequence key starts need per-sequence key counts");
  if (l.d > 512) throw_arg("head dimension " + std::to_string(l.d) + " exceeds 512");
  if (l.tk >= (int64_t{1} << 31) || l.tq >= (int64_t{1} << 31)) throw_arg("tq and tk must be below 2^31");
  if (!(l.score.scale >= 0.0 && l.score.softcap >= 0.0 && std::isfinite(l.score.scale) && std::isfinite(l.score.softcap)))
    throw_arg("the score scale and soft-cap must be finite and >= 0 (0: default scale, no cap)");
}

// Whether a launch of 4-warp CTAs with `key_groups` key groups and `splits` splits runs the wgmma
// kernel: where it applies (key groups 1, no split), the device is sm_90 and the build has it,
// unless HIPSTUDIO_ATTN_WGMMA says otherwise. Read at each such launch, so that a benchmark or a
// test can switch within one process; decode steps and split launches never read it.
std::atomic<int64_t> g_wgmma_launches{0};
bool use_wgmma(int key_groups, int splits) {
  if (key_groups != 1 || splits != 1) return false;
  const char* env = std::getenv("HIPSTUDIO_ATTN_WGMMA");
  const bool never = env && std::strcmp(env, "0") == 0, required = env && std::strcmp(env, "1") == 0;
  if (env && !never && !required && std::strcmp(env, "auto") != 0)
    throw_arg(std::string("HIPSTUDIO_ATTN_WGMMA must be 0 (never), 1 (required) or auto, not '") + env + "'");
  if (never) return false;
#ifdef HIPSTUDIO_HAVE_WGMMA
  const bool available = device_is_sm90();
  const char* why = "the device is not sm_90 (H100 / H200)";
#else
  const bool available = false;
  const char* why = "this build has no sm_90a code (CMAKE_CUDA_ARCHITECTURES without 90)";
#endif
  if (!available && required) throw_arg(std::string("HIPSTUDIO_ATTN_WGMMA=1 but ") + why + "; unset it or set 0");
  return available;
}

int64_t base_ctas(const AttentionLaunch& l) {
  const int64_t qbs = (l.tq + l.hip.b_q - 1) / l.hip.b_q;
  const int64_t row_tiles = (std::min<int64_t>(l.hip.b_q, l.tq) + kRowsCta - 1) / kRowsCta;
  return l.batch * l.hq * qbs * row_tiles;
}

// Whether a decode launch of `kernel` (grid CTAs, `splits` a row tile) merges in clusters: 2-16
// splits, the device launches clusters, the loaded code is sm_90's (it has the cluster
// instructions; an sm_80 build run on an H100 does not), and every cluster is resident at once
// (cudaOccupancyMaxActiveClusters, asked once per kernel and size: a cluster's CTAs share a GPC).
bool cluster_merge_fits(const void* kernel, int splits, unsigned grid, size_t smem) {
  if (splits < 2 || splits > kClusterMaxSplits || !device_supports_clusters() || !kernel_waits_for_prior_grid(kernel))
    return false;
  static OncePerKey<std::pair<const void*, int>, int> capacity;
  const int clusters = capacity.get(std::make_pair(kernel, splits), [&] {
    if (splits > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(splits)), cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(splits), attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
    cfg.attrs = &attr, cfg.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
      cudaGetLastError();  // a refusal is an answer (no clusters of that size), not an error to keep
      n = 0;
    }
    return n;
  });
  return clusters > 0 && static_cast<int64_t>(clusters) * splits >= grid;
}

}  // namespace

int64_t attention_wgmma_launches() { return g_wgmma_launches.load(std::memory_order_relaxed); }

int attention_splits(const AttentionLaunch& l) {
  if (!mma_path(l)) return 1;  // the SIMT path does not split
  if (l.num_splits > 0) return std::min(l.num_splits, kMaxSplits);
  const int64_t ctas = base_ctas(l);
  const int64_t want = 4 * static_cast<int64_t>(device_sm_count());
  if (ctas >= want / 2) return 1;
  // About 4 CTAs per multiprocessor, but no split shorter than one 64-key tile of a typical list.
  const int64_t est_keys = l.hip.k + l.hip.sink + l.hip.window + l.hip.b_q + l.hip.b_k;
  const int64_t tiles = (est_keys + kBK - 1) / kBK;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({(want + ctas - 1) / ctas, tiles, kMaxSplits})));
}

size_t attention_workspace_bytes(const AttentionLaunch& l, int splits) {
  if (splits <= 1) return 0;
  const size_t rows = static_cast<size_t>(l.batch * l.hq * l.tq);
  return static_cast<size_t>(splits) * rows * (static_cast<size_t>(l.d) + 2) * sizeof(float) +
         attention_counter_bytes(l);  // + the counters' room, used when l.counters is null
}

size_t attention_counter_bytes(const AttentionLaunch& l) {
  return static_cast<size_t>(base_ctas(l)) * sizeof(unsigned);  // one done-counter per row tile
}

void sparse_attention(const AttentionLaunch& l) {
  check_launch(l);
  AttnArgs a{};
  a.q = l.q, a.k = l.k, a.v = l.v, a.out = l.out;
  a.qs = l.q_stride, a.ks = l.k_stride, a.vs = l.v_stride, a.os = l.out_stride;
  a.positions = l.positions;
  a.key_counts = l.key_counts;
  a.key_starts = l.key_starts;
  a.hq = static_cast<int>(l.hq), a.hkv = static_cast<int>(l.hkv), a.tq = static_cast<int>(l.tq);
  a.tk = static_cast<int>(l.tk), a.d = static_cast<int>(l.d);
  a.qbs = static_cast<int>((l.tq + l.hip.b_q - 1) / l.hip.b_q), a.kb = static_cast<int>(hip::hip_kb(l.hip));
  a.hip = l.hip;
  a.blocks = l.blocks, a.counts = l.counts;
  a.rows_cta = static_cast<int>(std::min<int64_t>({l.hip.b_q, l.tq, kRowsCta}));
  a.row_tiles = static_cast<int>((std::min<int64_t>(l.hip.b_q, l.tq) + kRowsCta - 1) / kRowsCta);
  a.rows_total = l.batch * l.hq * l.tq;
  a.by_group = FastDiv(static_cast<uint32_t>(a.hq / a.hkv)), a.by_row_tiles = FastDiv(static_cast<uint32_t>(a.row_tiles));
  a.by_qbs = FastDiv(static_cast<uint32_t>(a.qbs)), a.by_hkv = FastDiv(static_cast<uint32_t>(a.hkv));
  a.by_bk = FastDiv(static_cast<uint32_t>(l.hip.b_k));
  const double scale = l.score.scale > 0.0 ? l.score.scale : 1.0 / std::sqrt(static_cast<double>(l.d));
  a.scale_log2 = static_cast<float>(scale) * kLog2e;
  if (l.score.softcap > 0.0) {
    a.cap_in = static_cast<float>(scale / l.score.softcap);
    a.cap_out = static_cast<float>(l.score.softcap) * kLog2e;
    a.scale_log2 = 1.f;
  }
  const bool mma = mma_path(l);
  a.splits = attention_splits(l);
  a.by_splits = FastDiv(static_cast<uint32_t>(a.splits));
  if (a.splits > 1) {
    if (!l.workspace) throw_arg("num_splits > 1 needs a workspace of attention_workspace_bytes() bytes");
    a.part_o = static_cast<float*>(l.workspace);
    a.part_ml = a.part_o + static_cast<size_t>(a.splits) * a.rows_total * l.d;
    a.done = l.counters ? static_cast<unsigned*>(l.counters)
                        : reinterpret_cast<unsigned*>(a.part_ml + static_cast<size_t>(a.splits) * a.rows_total * 2);
  }
  const int64_t ctas = base_ctas(l) * a.splits;
  if (ctas >= (int64_t{1} << 31)) throw_arg("too many CTAs for one launch");
  const dim3 grid(static_cast<unsigned>(ctas));
  cudaStream_t s = as_stream(l.stream);
  if (mma) {
    // One warp per 16 rows for CTAs of > 32 rows; smaller CTAs (b_q 32, decode) get 4 warps that
    // split each tile's keys into 2 or 4 groups.
    const int key_groups = a.rows_cta <= 16 ? 4 : a.rows_cta <= 32 ? 2 : 1;
#ifdef HIPSTUDIO_HAVE_WGMMA
    if (use_wgmma(key_groups, a.splits)) {
      launch_sparse_attention_wgmma(a, l.dtype, l.d <= 64 ? 64 : 128, grid.x, s);
      g_wgmma_launches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
#else
    (void)use_wgmma(key_groups, a.splits);  // HIPSTUDIO_ATTN_WGMMA=1 is an error here
#endif
    const int threads = kThreads;  // CTAs of 33..48 rows: the fourth warp only copies
    auto launch = [&](auto kernel, size_t smem) {
      const void* fn = reinterpret_cast<const void*>(kernel);
      set_smem(fn, smem, "sparse attention", true);
      // Decode CTAs of a split launch merge in clusters of `splits` CTAs where the GPU holds all
      // the clusters at once and the loaded code is sm_90's (cluster_merge_rows).
      if (key_groups == 4 && l.cluster_merge && cluster_merge_fits(fn, a.splits, grid.x, smem)) {
        AttnArgs clustered = a;
        clustered.cluster_merge = true;
        const bool dependent = l.mask_before_prior_kernel;
        clustered.overlap_prior = dependent;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid, cfg.blockDim = dim3(threads), cfg.dynamicSmemBytes = smem, cfg.stream = s;
        cudaLaunchAttribute attr[2] = {};
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = static_cast<unsigned>(a.splits), attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[1].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr, cfg.numAttrs = dependent ? 2 : 1;
        HIP_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, clustered));
        return;
      }
      // Only decode CTAs (4 key groups) wait for the kernel before (the others' code has no wait,
      // and a.overlap_prior stays false for them, as for the SIMT and wgmma kernels). Where the
      // loaded code cannot wait (an sm_80 build), launch_after_prior launches plainly: the early
      // copies are then merely early.
      if (l.mask_before_prior_kernel && key_groups == 4) {
        AttnArgs dependent = a;
        dependent.overlap_prior = true;
        launch_after_prior(kernel, grid, dim3(threads), smem, s, dependent);
      } else {
        kernel<<<grid, threads, smem, s>>>(a);
      }
    };
    auto launch_d = [&](auto tag, auto d_tag) {
      using T = decltype(tag);
      constexpr int D = decltype(d_tag)::value;
      // Decode (4 key groups) without per-sequence keys, the batch-1 step, gets the kernel that
      // reads none; the rarer shapes keep one generic kernel each.
      const bool per_seq = l.key_counts || l.key_starts;
      if (key_groups == 4 && !per_seq) launch(sparse_attention_mma<T, D, 4, false>, mma_smem_bytes<D>());
      else if (key_groups == 4) launch(sparse_attention_mma<T, D, 4, true>, mma_smem_bytes<D>());
      else if (key_groups == 2) launch(sparse_attention_mma<T, D, 2, true>, mma_smem_bytes<D>());
      else launch(sparse_attention_mma<T, D, 1, true>, mma_smem_bytes<D>());
    };
    auto launch_dtype = [&](auto tag) {
      if (l.d <= 64) launch_d(tag, std::integral_constant<int, 64>{});
      else launch_d(tag, std::integral_constant<int, 128>{});
    };
    if (l.dtype == ElementType::kBF16) launch_dtype(__nv_bfloat16{});
    else launch_dtype(__half{});
    HIP_CUDA_CHECK_LAUNCH("sparse_attention_mma");
    return;
  }
  switch (l.dtype) {
    case ElementType::kF32: sparse_attention_simt<float><<<grid, 128, 0, s>>>(a); break;
    case ElementType::kBF16: sparse_attention_simt<__nv_bfloat16><<<grid, 128, 0, s>>>(a); break;
    case ElementType::kF16: sparse_attention_simt<__half><<<grid, 128, 0, s>>>(a); break;
  }
  HIP_CUDA_CHECK_LAUNCH("sparse_attention_simt");
}

}  // namespace hipstudio::gpu
