#pragma once
// Pieces shared by the tensor-core attention kernels (kernels/cuda/sparse_attention.cu: mma.sync,
// sm_80+; kernels/cuda/sm90a/sparse_attention_wgmma.cu: wgmma, sm_90a): the launch arguments, the
// CTA's coordinates and key list, the tile pipeline's key slots, and the per-chunk mask, online
// softmax and output steps, so that both kernels compute the same softmax the same way.
#include <cmath>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fast_div.h"

namespace hipstudio::gpu {

// The launch arguments of both tensor-core kernels (and the SIMT one): plain data, passed by value.
struct AttnArgs {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  Strides qs, ks, vs, os;
  const int64_t* positions;
  // AttentionLaunch::key_counts: batch entry b's keys are [0, key_counts[b]) (null: tk for every entry).
  const int32_t* key_counts;
  // AttentionLaunch::key_starts: batch entry b's keys and values start at row key_starts[b] of K
  // and V, which the batch shares (null: at its batch stride).
  const int32_t* key_starts;
  int hq, hkv, tq, tk, d, qbs, kb;
  hip::HipParams hip;
  const int32_t* blocks;
  const int32_t* counts;
  int splits, row_tiles, rows_cta;
  float* part_o;   // (splits, batch * hq * tq, d)
  float* part_ml;  // (splits, batch * hq * tq, 2): running max (log2 units) and sum
  unsigned* done;  // per row tile (blockIdx.x / splits): splits finished; zero between calls
  int64_t rows_total;
  float scale_log2;
  // Soft-capping (AttentionLaunch::score.softcap > 0): each raw score s becomes
  // tanh(s * cap_in) * cap_out, the capped logit in log2 units (cap_in = scale / cap, cap_out =
  // cap * log2 e), before the mask, and scale_log2 is 1. cap_out 0: no cap (today's path).
  float cap_in, cap_out;
  FastDiv by_splits, by_group, by_row_tiles, by_qbs, by_hkv, by_bk;  // no integer division in the kernels
  // AttentionLaunch::mask_before_prior_kernel, for a launch of decode CTAs (4 key groups) of the
  // tensor-core kernel, sparse_attention_mma, the only kernel that reads it: launched as a
  // programmatic dependent of the kernel that writes Q and the keys and values at the query rows'
  // positions. False for every other launch.
  bool overlap_prior;
  // Decode CTAs (4 key groups) launched in thread-block clusters of `splits` CTAs (sm_90): the
  // splits' partials meet in the cluster's shared memory instead of the workspace
  // (sparse_attention.cu, cluster_merge_rows). False for every other launch.
  bool cluster_merge;
};

namespace {

constexpr int kBK = 64;       // keys per tile
constexpr int kRowsCta = 64;  // query rows per CTA at most (4 warps)
constexpr float kLog2e = 1.4426950408889634f;
// Lazy rescaling (v15): a row's running max (log2 units) moves only when a tile's max exceeds it
// by more than this, so most tiles skip the O rescale; P entries stay <= 2^8, far from overflow in
// bf16, f16 and float32, and O, l and m stay consistent, so the result is the same softmax.
constexpr float kRescaleSlack = 8.f;

// The CTA's key list: [0, sink_len) | blk_len / b_k block slots (the first cnt hold selected
// blocks of b_k keys, the rest are empty) | [dense_from, dense_from + tail_len). Entry j's key, or
// -1 for an empty entry. I: int64_t for the SIMT path, int for the tensor-core path (tk < 2^30).
template <class I>
struct KeyList {
  I sink_len, blk_len, tail_len, dense_from, total, cnt, b_k;
  const int32_t* blocks;
  FastDiv by_bk;
  __device__ I slot_of(I jb) const {  // jb / b_k; the tensor-core path's entries are below 2^31
    if constexpr (std::is_same_v<I, int>) return static_cast<I>(by_bk.div(static_cast<uint32_t>(jb)));
    else return jb / b_k;
  }
  // The block id entry j reads (0 outside the block part): a load that can be started early.
  __device__ I block_of(I j) const {
    const I jb = j - sink_len;
    return jb >= 0 && jb < blk_len ? blocks[slot_of(jb)] : I{0};
  }
  // Entry j's key given block_of(j).
  __device__ I key(I j, I blk) const {
    if (j < sink_len) return j;
    j -= sink_len;
    if (j < blk_len) {
      const I slot = slot_of(j);  // the block load need not wait for cnt: slot < kb
      return slot < cnt && blk >= 0 ? blk * b_k + (j - slot * b_k) : I{-1};
    }
    j -= blk_len;
    return j < tail_len ? dense_from + j : I{-1};
  }
  __device__ I key(I j) const { return key(j, block_of(j)); }
};

struct CtaCoords {
  int b, h, qb, r0, r1, item, split;
};

__device__ CtaCoords cta_coords(const AttnArgs& a) {
  CtaCoords c;
  uint32_t idx = blockIdx.x;  // the launch keeps the grid below 2^31
  // Fastest first: split, head within its KV group, row tile, query block (longest lists first),
  // KV group, batch: resident CTAs gather from one group's K/V, which L2 can hold.
  const int group = a.hq / a.hkv;
  uint32_t q = a.by_splits.div(idx);
  c.split = static_cast<int>(idx - q * a.splits);
  idx = q, q = a.by_group.div(idx);
  const int hg = static_cast<int>(idx - q * group);
  idx = q, q = a.by_row_tiles.div(idx);
  const int rt = static_cast<int>(idx - q * a.row_tiles);
  idx = q, q = a.by_qbs.div(idx);
  c.qb = a.qbs - 1 - static_cast<int>(idx - q * a.qbs);
  idx = q, q = a.by_hkv.div(idx);
  c.h = static_cast<int>(idx - q * a.hkv) * group + hg;
  c.b = static_cast<int>(q);
  c.item = (c.b * a.hq + c.h) * a.qbs + c.qb;
  const int qb_begin = c.qb * static_cast<int>(a.hip.b_q);
  const int qb_end = min(a.tq, qb_begin + static_cast<int>(a.hip.b_q));
  c.r0 = qb_begin + rt * kRowsCta;
  c.r1 = min(qb_end, c.r0 + kRowsCta);
  return c;
}

// Batch entry b's key count: its query rows sit at the end of its keys unless positions are given.
// PerSeq false: the launch has no per-sequence key counts or starts (AttnArgs::key_counts and
// key_starts null), known at compile time, so that a batch-1 decode kernel carries none of their
// loads and branches (the batched path's per-sequence reads cost batch-1 decode about 1% at 128k).
template <bool PerSeq = true>
__device__ __forceinline__ int keys_of(const AttnArgs& a, int b) {
  return PerSeq && a.key_counts ? a.key_counts[b] : a.tk;
}

// Batch entry b's K (or V, with its strides s) offset from the tensor's start, in elements.
template <bool PerSeq = true>
__device__ __forceinline__ int64_t kv_offset(const AttnArgs& a, const Strides& s, int b) {
  return PerSeq && a.key_starts ? static_cast<int64_t>(a.key_starts[b]) * s.t : static_cast<int64_t>(b) * s.b;
}

template <bool PerSeq = true>
__device__ __forceinline__ int visible_end(const AttnArgs& a, int b, int row) {
  return static_cast<int>(dev_visible_end(a.positions, a.tq, keys_of<PerSeq>(a, b), a.hip.causal, row));
}

// The smallest and largest visible end over batch entry b's rows [r0, r1): positions ascend unless given.
template <bool PerSeq = true>
__device__ void row_ends(const AttnArgs& a, int b, int r0, int r1, int& e_lo, int& e_hi) {
  if (!a.positions || !a.hip.causal) {
    e_lo = visible_end<PerSeq>(a, b, r0), e_hi = visible_end<PerSeq>(a, b, r1 - 1);
    return;
  }
  e_lo = INT32_MAX, e_hi = -1;
  for (int r = r0; r < r1; ++r) {
    const int e = visible_end<PerSeq>(a, b, r);
    e_lo = min(e_lo, e), e_hi = max(e_hi, e);
  }
}

// fixed_slots: the block part always spans kb slots, so that a split's tiles do not depend on the
// item's count (decode: the count, the block ids and Q then load together, v15).
template <class I, bool PerSeq = true>
__device__ KeyList<I> key_list(const AttnArgs& a, const CtaCoords& c, I e_max, bool fixed_slots) {
  const DevRange sr = dev_search_range(a.hip, a.positions, a.tq, keys_of<PerSeq>(a, c.b), c.qb);
  KeyList<I> kl;
  kl.sink_len = static_cast<I>(min(a.hip.sink, static_cast<int64_t>(e_max) + 1));
  const I cnt = static_cast<I>(min(a.counts[c.item], a.kb));
  kl.cnt = cnt > 0 ? cnt : 0;
  kl.b_k = static_cast<I>(a.hip.b_k);
  kl.blk_len = (fixed_slots ? static_cast<I>(a.kb) : kl.cnt) * kl.b_k;
  kl.dense_from = static_cast<I>(sr.dense_from);
  kl.tail_len = max(I{0}, e_max - kl.dense_from + 1);
  kl.total = kl.sink_len + kl.blk_len + kl.tail_len;
  kl.blocks = a.blocks + static_cast<int64_t>(c.item) * a.kb;
  kl.by_bk = a.by_bk;
  return kl;
}

constexpr int kThreads = 128;  // 4 warps per CTA
constexpr int kKeySlots = 3;   // key ids run two tiles ahead of the math, K/V tiles one

// A tile entry's key and its K and V row offsets in 16-byte units (0 where no key).
struct alignas(16) TileKey {  // one 16-byte shared-memory load
  unsigned k_off, v_off;
  int key, pad;
};

// Writes tile `tile`'s keys into its key slot (thread t < kBK: entry t, from the block id `blk`
// loaded a tile earlier) with their K and V row offsets in 16-byte units, computed once per key
// rather than once per copied piece; returns, to every thread of the CTA (a barrier), whether any
// key of the tile is empty or beyond e_lo, the first row's visible end (only then does the tile
// need the per-key mask).
__device__ __forceinline__ bool put_tile_keys(TileKey* slot_keys, const KeyList<int>& kl, int tile, int blk, int tid,
                                              unsigned k_row16, unsigned v_row16, int e_lo) {
  bool masked = false;
  if (tid < kBK) {
    const int key = kl.key(tile * kBK + tid, blk);
    TileKey tk;
    tk.key = key, tk.pad = 0;
    tk.k_off = key < 0 ? 0u : static_cast<unsigned>(key) * k_row16;
    tk.v_off = key < 0 ? 0u : static_cast<unsigned>(key) * v_row16;
    slot_keys[tid] = tk;
    masked = key < 0 || key > e_lo;
  }
  return __syncthreads_or(masked) != 0;
}

// The tile pipeline of both attention kernels, two barriers a tile: key ids run two tiles ahead
// (kKeySlots slots), K/V copies one tile ahead (two stages). The kernel brings its own
// key_ids(tile, slot, blk) -> whether the tile needs the per-key mask, block_of(tile) and
// issue(stage, slot), since their shared-memory layouts differ; tile i is t_begin + i. The start
// (ids of tiles 0 and 1, tile 0's copies) stays in each kernel: as a helper here it changed the
// wgmma kernel's machine code (one compare, then a different register allocation), and no GPU was
// left to measure that; these two leave every attention kernel's code byte for byte as it was.

// Head of iteration i: the next tile's copies fly while this one is computed; this thread's
// copies of tile i have landed on return (the caller's barrier makes them everyone's).
template <class Issue>
__device__ __forceinline__ void await_tile(int i, int n_tiles, Issue& issue) {
  if (i + 1 < n_tiles) {
    issue((i & 1) ^ 1, (i + 1) % kKeySlots);
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
}
// End of iteration i: the ids of tile i + 2 go to the slot tile i - 1 used (blk2: its block id,
// loaded during the math); the barrier inside key_ids also tells the next iteration that every
// warp is done with this K/V stage.
template <class KeyIds>
__device__ __forceinline__ void finish_tile(int i, int n_tiles, int t_begin, int blk2, KeyIds& key_ids,
                                            bool& masked_cur, bool& masked_next) {
  bool masked_after = false;
  if (i + 2 < n_tiles) masked_after = key_ids(t_begin + i + 2, (i + 2) % kKeySlots, blk2);
  masked_cur = masked_next, masked_next = masked_after;
}

// Q's A fragments for this lane's rows row0 and row1 (mma.m16n8k16's layout, also wgmma's A in
// registers), zero where the row is not the CTA's (q0ok, q1ok) and for columns past d.
template <class T, int KS>
__device__ __forceinline__ void load_q_fragments(uint32_t (*qf)[4], const AttnArgs& a, const CtaCoords& c, int row0,
                                                 int row1, bool q0ok, bool q1ok, int d, int cq) {
  const T* qbase = static_cast<const T*>(a.q) + c.b * a.qs.b + c.h * a.qs.h;
  const T* qrow0 = qbase + static_cast<int64_t>(row0) * a.qs.t;
  const T* qrow1 = qbase + static_cast<int64_t>(row1) * a.qs.t;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const int col = ks * 16 + cq * 2;
    const bool lo = col < d, hi = col + 8 < d;
    qf[ks][0] = q0ok && lo ? *reinterpret_cast<const uint32_t*>(qrow0 + col) : 0u;
    qf[ks][1] = q1ok && lo ? *reinterpret_cast<const uint32_t*>(qrow1 + col) : 0u;
    qf[ks][2] = q0ok && hi ? *reinterpret_cast<const uint32_t*>(qrow0 + col + 8) : 0u;
    qf[ks][3] = q1ok && hi ? *reinterpret_cast<const uint32_t*>(qrow1 + col + 8) : 0u;
  }
}

// A row's softmax sum from its 4 lanes' partial sums (lanes 4g .. 4g + 3 hold row g's columns).
__device__ __forceinline__ float row_sum(float l) {
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  return l + __shfl_xor_sync(0xffffffffu, l, 2);
}

// The per-key mask of one chunk of kSTiles n-tiles (8 keys each) from tile entry kc on, in the
// accumulator layout (lane (g, c): rows g and g + 8, columns 2c and 2c + 1 of each n-tile): empty
// entries and keys past a row's visible end (e0, e1: this lane's two rows) score -inf.
template <int kSTiles>
__device__ __forceinline__ void mask_chunk(float (*s)[4], const TileKey* skey, int kc, int cq, int e0, int e1) {
#pragma unroll
  for (int nt = 0; nt < kSTiles; ++nt) {
    const int key[2] = {skey[kc + nt * 8 + cq * 2].key, skey[kc + nt * 8 + cq * 2 + 1].key};
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      if (key[x] < 0 || key[x] > e0) s[nt][x] = -INFINITY;
      if (key[x] < 0 || key[x] > e1) s[nt][2 + x] = -INFINITY;
    }
  }
}

// The soft-cap on a chunk's raw scores (AttnArgs::cap_in / cap_out), before mask_chunk sets the
// hidden entries to -inf (tanh would make them finite).
template <int kSTiles>
__device__ __forceinline__ void cap_chunk(float (*s)[4], float cap_in, float cap_out) {
#pragma unroll
  for (int nt = 0; nt < kSTiles; ++nt)
#pragma unroll
    for (int x = 0; x < 4; ++x) s[nt][x] = tanhf(s[nt][x] * cap_in) * cap_out;
}

// One online-softmax step over a chunk's raw scores s (same layout), in log2 units: the max on
// the raw scores (scale > 0), the scale folded into the exponent's fma; a row's running max m
// moves only by more than kRescaleSlack, and O and l are rescaled only then. s becomes P.
template <int kSTiles, int NT>
__device__ __forceinline__ void softmax_chunk(float (*s)[4], float (*o)[4], float& m0, float& m1, float& l0, float& l1,
                                              float scale_log2) {
  float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < kSTiles; ++nt) {
    mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
    mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  const float t0 = mx0 * scale_log2, t1 = mx1 * scale_log2;
  const bool up0 = t0 > m0 + kRescaleSlack, up1 = t1 > m1 + kRescaleSlack;
  if (__any_sync(0xffffffffu, up0 || up1)) {
    const float al0 = up0 ? fast_exp2(m0 - t0) : 1.f, al1 = up1 ? fast_exp2(m1 - t1) : 1.f;
    m0 = up0 ? t0 : m0, m1 = up1 ? t1 : m1;
    l0 *= al0, l1 *= al1;
#pragma unroll
    for (int t = 0; t < NT; ++t) o[t][0] *= al0, o[t][1] *= al0, o[t][2] *= al1, o[t][3] *= al1;
  }
  const float nm0 = m0 == -INFINITY ? 0.f : -m0, nm1 = m1 == -INFINITY ? 0.f : -m1;
#pragma unroll
  for (int nt = 0; nt < kSTiles; ++nt) {
    s[nt][0] = fast_exp2(fmaf(s[nt][0], scale_log2, nm0));
    s[nt][1] = fast_exp2(fmaf(s[nt][1], scale_log2, nm0));
    s[nt][2] = fast_exp2(fmaf(s[nt][2], scale_log2, nm1));
    s[nt][3] = fast_exp2(fmaf(s[nt][3], scale_log2, nm1));
    l0 += s[nt][0] + s[nt][1];
    l1 += s[nt][2] + s[nt][3];
  }
}

// P re-packed from the accumulator layout into A fragments of 16 keys (the layout of mma.m16n8k16's
// A and of wgmma's A in registers, a warp's 16 rows).
template <class T, int kSTiles>
__device__ __forceinline__ void pack_p(const float (*s)[4], uint32_t (*pf)[4]) {
#pragma unroll
  for (int kk = 0; kk < kSTiles / 2; ++kk) {
    pf[kk][0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
    pf[kk][1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
    pf[kk][2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pf[kk][3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// Writes this lane's parts of its two rows, O / l, where the CTA needs no split merge (l summed
// over the row's 4 lanes already; l == 0: a row that sees no key, written as zeros). q0ok / q1ok:
// the rows are the CTA's; d: the real head dimension (columns past it are padding).
template <class T, int NT>
__device__ __forceinline__ void store_rows(const AttnArgs& a, const CtaCoords& c, float (*o)[4], float l0, float l1,
                                           int row0, int row1, bool q0ok, bool q1ok, int d, int cq) {
  T* obase = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h;
  T* orow0 = obase + static_cast<int64_t>(row0) * a.os.t + cq * 2;
  T* orow1 = obase + static_cast<int64_t>(row1) * a.os.t + cq * 2;
  const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t * 8 + cq * 2 >= d) continue;
    if (q0ok) *reinterpret_cast<uint32_t*>(orow0 + t * 8) = pack2<T>(o[t][0] * inv0, o[t][1] * inv0);
    if (q1ok) *reinterpret_cast<uint32_t*>(orow1 + t * 8) = pack2<T>(o[t][2] * inv1, o[t][3] * inv1);
  }
}

}  // namespace
}  // namespace hipstudio::gpu
