// HiP mask estimation, warp-per-search path (v8-v13, kernels/BENCHMARKS.md): the tensor-core
// (bf16/f16) searches of the common shapes (Kb <= 512, <= 32 sampled query rows, d 64 or 128,
// 1/2/4/8 sampled keys per branch). Same semantics as kernels/mask_reference.h and the CTA kernel
// in mask_kernel.cu, which keeps every other case (float32 exact scores, traces, Kb > 512).
//
// Why: the CTA kernel ran ~45 dependent CTA barriers per iteration with 3 CTAs per SM, so the SM
// idled on barrier latency. Here W warps run one search (W = 1 in prefill: no CTA barrier at
// all, only warp-level shuffles and __syncwarp; decode, with few searches, spreads the scoring of
// one search over up to 16 warps with one named barrier per phase):
//   A. the leader warp splits its nodes (lane L owns nodes [L npl, (L+1) npl), so that lane order is
//      node order) and lists the branches whose representative is new (in branch order);
//   B. every warp of the search scores tiles of 16 listed keys: two n-tiles of keys as the mma B
//      operand, the sampled query rows as A (registers, loaded once per search). Lane (g, c)
//      gathers exactly its B fragments, 16-byte pieces c, c+4, ... of keys g and 8+g, by cp.async
//      into its own slots of a per-warp ring (kStages deep) and reads them back itself, so no
//      barrier is needed; the head dimension of Q is permuted the same way, which leaves the dot
//      products unchanged (only the order of the tensor core's float32 sums differs, which bf16
//      scores do not pin down). A key's maximum over the rows is in-lane over the m-tiles and
//      accumulator rows, then a reduce-scatter over the 8 lanes of the other rows (3 shuffles);
//   C. the leader warp selects the Kb best by a bitwise search for the Kb-th largest score key
//      (warp reductions only; stops once exactly Kb keys are above the prefix), breaks ties by
//      branch order with a warp scan, and writes the kept branches as the next nodes.
// The 4 searches of a CTA (W = 1) are the 4 heads of one KV group and one query block: their
// first iteration scores identical keys (v8-v14 gathered through L1 for that; v15 measured the
// L2-only gather 12 % faster: the ~40 KB of L1 left beside the shared memory only thrashed).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mask_search.cuh"
#include "kernels/cuda/search_order.h"
#include "kernels/cuda/mask_warp.h"

namespace hipstudio::gpu {
namespace {

constexpr int kMaxNpl = 16;    // nodes per lane: Kb <= 512 (NPL 8 for Kb <= 256, 16 above)
constexpr int kMaxRows = 32;   // two m-tiles of sampled query rows
constexpr int kCtaWarps = 4;   // warps per CTA when W < 4
constexpr int kMaxW = 16;      // warps per search at most (decode)
#ifndef HIPSTUDIO_MASK_STAGES  // compile-time knobs for scripts/dev/device_variants.sh
#define HIPSTUDIO_MASK_STAGES 3
#endif
#ifndef HIPSTUDIO_MASK_L1
#define HIPSTUDIO_MASK_L1 0  // 0: gathers to L2 only (.cg, v15: 12 % faster); 1: through L1 (.ca)
#endif
constexpr int kStages = HIPSTUDIO_MASK_STAGES;  // per-warp ring of 16-key tiles: kStages - 1 in flight while one is scored
                               // (3 x 4 KB a warp keeps 3 CTAs of 4 warps per SM, as the registers do)

struct WarpMaskArgs {
  const void* q;
  const void* k;
  Strides qs, ks;
  const int64_t* positions;
  int64_t hq, hkv, tq, tk, d, qbs, items;
  hip::HipParams hip;
  int kb, npl, kpr_log2, rows_max;
  int w, searches_per_cta;
  int smem_per_search;  // bytes
  int32_t* blocks;
  int32_t* counts;
  int32_t* iterations;
  int64_t* branches;
};

// Per-search shared memory: nodes (begin, end, score); the list of branches to score, in branch
// order: entry x holds the representative block until its tile is gathered, then the branch's
// score (float bits), written by the lane that finishes the tile (a tile's entries belong to it
// alone); control words.
struct SearchSmem {
  int* nd_begin;
  int* nd_end;
  float* nd_score;
  int* list;
  float* list_score;  // the same memory as list
  int* ctl;
};

__host__ __device__ inline int search_smem_bytes(int kb) { return 3 * kb * 4 + 2 * kb * 4 + 16; }

// Where the warps' gather rings start, after the searches' lists: on a 128-byte line. The
// few-search kernel's refresh ran 22 % slower with its rings at 16 mod 32 than at 32 mod 128
// and 7 % faster aligned (kernels/BENCHMARKS.md, v17).
#ifndef HIPSTUDIO_MASK_RING_ALIGN  // compile-time knob for scripts/dev/device_variants.sh
#define HIPSTUDIO_MASK_RING_ALIGN 128
#endif
__host__ __device__ inline int ring_offset(int searches_per_cta, int smem_per_search) {
  constexpr int align = HIPSTUDIO_MASK_RING_ALIGN;
  return (searches_per_cta * smem_per_search + align - 1) / align * align;
}

__device__ __forceinline__ SearchSmem search_smem(uint8_t* base, int kb) {
  SearchSmem s;
  s.list = reinterpret_cast<int*>(base);
  s.list_score = reinterpret_cast<float*>(base);
  s.nd_begin = s.list + 2 * kb;
  s.nd_end = s.nd_begin + kb;
  s.nd_score = reinterpret_cast<float*>(s.nd_end + kb);
  s.ctl = reinterpret_cast<int*>(s.nd_score + kb);
  return s;
}

// Warp-level sync for W = 1, else a named barrier over the search's W warps (id 1 + search).
__device__ __forceinline__ void search_sync(int w, int local) {
  if (w == 1) {
    __syncwarp();
  } else {
    asm volatile("bar.sync %0, %1;\n" ::"r"(local + 1), "r"(w * 32) : "memory");
  }
}

__device__ __forceinline__ int warp_excl_scan(int v, int lane, int* total) {
  int x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  *total = __shfl_sync(0xffffffffu, x, 31);
  return x - v;
}

// The gather's 16-byte copy: common.cuh's L2-only cp_async16 unless HIPSTUDIO_MASK_L1 asks for L1 (.ca).
__device__ __forceinline__ void cp_async16_gather(void* smem, const void* gmem, bool valid) {
#if HIPSTUDIO_MASK_L1
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(valid ? 16 : 0));
#else
  cp_async16(smem, gmem, valid);
#endif
}

// MT m-tiles of 16 sampled query rows. MT = 2 (prefill, up to 32 rows) keeps 64 registers of Q
// fragments at d 128, so its CTAs are 4 warps (W <= 4) with up to 168 registers a thread; MT = 1
// (decode: one query) fits the 128 registers that 16-warp searches allow.
// NPL nodes per lane of the leader warp (8: Kb <= 256; 16: Kb <= 512, whose 4 searches of a CTA
// take ~88 KB of shared memory, so 2 CTAs an SM and room for more registers).
template <class T, int D, int MT, int NPL>
__global__ void __launch_bounds__(MT == 2 ? kCtaWarps * 32 : kMaxW * 32, MT == 2 ? (NPL > 8 ? 2 : 3) : 1)
    hip_mask_warp_kernel(const WarpMaskArgs a) {
  constexpr int KS = D / 16;  // k-steps per key row
  constexpr int PL = D / 32;  // 16-byte pieces of a key row that one lane gathers (of D / 8)
  constexpr int STAGE = 2 * PL * 32;  // ring stage: 16 keys, in uint4 (lane-private slots)
  extern __shared__ __align__(128) uint8_t smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gq = lane >> 2, cq = lane & 3;
  const int w = a.w, local = warp / w, wi = warp % w;
  const int64_t s = static_cast<int64_t>(blockIdx.x) * a.searches_per_cta + local;
  if (s >= a.items) return;  // all warps of a search leave together
  const SearchSmem sm = search_smem(smem + local * a.smem_per_search, a.kb);
  uint4* ring = reinterpret_cast<uint4*>(smem + ring_offset(a.searches_per_cta, a.smem_per_search)) + warp * kStages * STAGE;

  // Grid order (kernels/cuda/search_order.h): a KV group's heads fastest, longest searches first.
  const SearchCoords sc = search_coords(s, a.hq, a.hkv, a.qbs);
  const int64_t b = sc.b, h = sc.h, qb = sc.qb, item = sc.item;
  const int kb = a.kb, npl = a.npl;
  int32_t* out = a.blocks + item * kb;
  const DevRange sr = dev_search_range(a.hip, a.positions, a.tq, a.tk, qb);
  const int64_t n = sr.hi - sr.lo;

  if (n <= kb) {  // the whole range fits in the budget
    if (wi == 0) {
      for (int j = lane; j < kb; j += 32) out[j] = j < n ? static_cast<int32_t>(sr.lo + j) : -1;
      if (lane == 0) {
        a.counts[item] = static_cast<int32_t>(n);
        if (a.iterations) a.iterations[item] = 0;
        if (a.branches) a.branches[item] = 0;
      }
    }
    return;
  }

  const int64_t g = sc.g;
  const int b_sq = static_cast<int>(a.hip.b_sq);  // <= b_q <= INT32_MAX; 32-bit divisions
  const int R = (static_cast<int>(sr.row_end - sr.row_begin) + b_sq - 1) / b_sq;
  const T* qbase = static_cast<const T*>(a.q) + b * a.qs.b + h * a.qs.h;
  const T* kbase = static_cast<const T*>(a.k) + b * a.ks.b + g * a.ks.h;
  const int kpr_log2 = a.kpr_log2, kpr = 1 << kpr_log2;
  const int b_k = static_cast<int>(a.hip.b_k), b_sk = static_cast<int>(a.hip.b_sk);
  const int k_row = static_cast<int>(a.ks.t);  // eligibility: tk * k_row < 2^31
  const double rho = a.hip.rho;

  // Q as the A operand, MT m-tiles of 16 sampled rows (mask_search.cuh's permuted layout).
  uint32_t qf[MT][KS][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
    load_q_mtile<T, D>(qf[mt], qbase + sr.row_begin * a.qs.t, a.hip.b_sq * a.qs.t, R, mt, lane);

  // Kb initial nodes of (nearly) equal size: the largest holds ceil(n / Kb) blocks.
  if (wi == 0) {
#pragma unroll
    for (int j = 0; j < NPL; ++j) {
      const int node = lane * npl + j;
      if (j < npl && node < kb) {
        sm.nd_begin[node] = initial_node_start(sr.lo, n, kb, node);
        sm.nd_end[node] = initial_node_start(sr.lo, n, kb, node + 1);
        sm.nd_score[node] = 0.f;
      }
    }
  }
  // Per-lane constants of the scoring loop. Gather: lane (g, c) copies pieces c, c + 4, ... of
  // tile keys g and 8 + g (its B fragments of the two n-tiles) into its own ring slots (d == D:
  // eligibility). Rows: accumulator rows g, g + 8 of m-tile mt are sampled rows mt * 16 + g, + 8;
  // rows past R score 0 on zero Q rows and must not count.
  const T* klane = kbase + cq * 8;
  const bool all_rows = R >= MT * 16;
  const uint32_t row_ok = real_rows_mask<MT>(R, lane);
  uint4* ring_lane = ring + lane;

  int largest = static_cast<int>((static_cast<uint32_t>(n) + kb - 1) / kb);  // n < 2^31: blocks below tk
  int iter = 0;
  int64_t branch_total = 0;
  search_sync(w, local);

  while (largest > 1) {
    // A. split and list the branches whose representative is not the parent's (branch order =
    // lane order, then node, then side); the leader keeps need_mask and base for phase C.
    int ns = 0, nb = 0, base = 0;
    uint32_t need_mask = 0;  // bits 2j, 2j + 1: node j's two branches are listed
    if (wi == 0) {
      int cnt_br = 0;
#pragma unroll
      for (int j = 0; j < NPL; ++j) {
        const int node = lane * npl + j;
        if (j < npl && node < kb) {
          const int nb0 = sm.nd_begin[node], ne = sm.nd_end[node];
          const int pr = iter == 0 ? -1 : repr_of(nb0, ne, rho);
          if (ne - nb0 >= 2) {
            const int m = nb0 + (ne - nb0) / 2;
            if (repr_of(nb0, m, rho) != pr) need_mask |= 1u << (2 * j);
            if (repr_of(m, ne, rho) != pr) need_mask |= 1u << (2 * j + 1);
            cnt_br += 2;
          } else {
            if (nb0 != pr) need_mask |= 1u << (2 * j);
            cnt_br += 1;
          }
        }
      }
      base = warp_excl_scan(__popc(need_mask), lane, &ns);
      nb = __reduce_add_sync(0xffffffffu, cnt_br);
      int at = base;
#pragma unroll
      for (int j = 0; j < NPL; ++j) {
        if (!(need_mask & (3u << (2 * j)))) continue;
        const int node = lane * npl + j;
        const int nb0 = sm.nd_begin[node], ne = sm.nd_end[node];
        const int m = nb0 + (ne - nb0) / 2;
        if (need_mask & (1u << (2 * j))) sm.list[at++] = ne - nb0 >= 2 ? repr_of(nb0, m, rho) : nb0;
        if (need_mask & (2u << (2 * j))) sm.list[at++] = repr_of(m, ne, rho);
      }
      if (w > 1 && lane == 0) sm.ctl[1] = ns;
    }
    search_sync(w, local);
    if (w > 1) ns = sm.ctl[1];

    // B. score the listed branches, 16 sampled keys a tile: two n-tiles of keys as the B operand,
    // sampled rows as A (registers). Each lane copies exactly the pieces of its B fragments into
    // its own ring slots (cp.async, kStages - 1 tiles in flight without holding registers) and reads
    // them back itself: no barrier, only wait_group. The list entries of a tile are read when it is
    // issued and overwritten with scores when it is finished, kStages - 1 tiles later, by lanes
    // that passed a __syncwarp in between.
    const int pairs = ns << kpr_log2;
    const int tiles = (pairs + 15) >> 4;
    // The list entries (representative blocks) of tile t's two n-tiles for this lane's key g:
    // read a tile before its copies are issued, so that the shared-memory load is not waited on
    // right before the address math (v15: the largest single stall of the loop).
    auto list_pair = [&](int t) -> int2 {
      int2 r = make_int2(0, 0);
      const int p0 = t * 16 + gq, p1 = p0 + 8;
      if (p0 < pairs) r.x = sm.list[p0 >> kpr_log2];
      if (p1 < pairs) r.y = sm.list[p1 >> kpr_log2];
      return r;
    };
    auto issue = [&](int t, int stage, int2 reps) {
      uint4* dst = ring_lane + stage * STAGE;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int p = t * 16 + nt * 8 + gq;
        const bool ok = p < pairs;
        const int key = ok ? (nt ? reps.y : reps.x) * b_k + (p & (kpr - 1)) * b_sk : 0;
        const T* src = klane + key * k_row;  // eligibility: tk * k_row < 2^31
#pragma unroll
        for (int j = 0; j < PL; ++j) cp_async16_gather(dst + (nt * PL + j) * 32, src + 32 * j, ok);
      }
    };
    // Finishes a tile (mask_search.cuh): the branch score into its list entry.
    auto finish = [&](float k00, float k01, float k10, float k11, int t) {
      int pair = 0;
      const float m = tile_branch_score(k00, k01, k10, k11, kpr_log2, lane, &pair);
      const int p = t * 16 + pair;
      if (pair >= 0 && p < pairs) sm.list_score[p >> kpr_log2] = m;
    };
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
      const int t = wi + i * w;
      if (t < tiles) issue(t, i, list_pair(t));
      cp_async_commit();
    }
    int2 reps_next = list_pair(wi + (kStages - 1) * w);
    for (int t = wi, stage = 0, next = kStages - 1; t < tiles; t += w) {
      __syncwarp();  // list entries of tile t were read (issue) before any lane overwrites them
      const int tn = t + (kStages - 1) * w;
      if (tn < tiles) issue(tn, next, reps_next);
      cp_async_commit();
      reps_next = list_pair(tn + w);  // not finished (overwritten) before tile tn + w is scored
      cp_async_wait<kStages - 1>();  // this lane's copies of tile t (kStages - 1 groups ago) landed
      const uint4* src = ring_lane + stage * STAGE;
      stage = stage + 1 == kStages ? 0 : stage + 1;
      next = next + 1 == kStages ? 0 : next + 1;
      float k00, k01, k10, k11;
      score_tile<T, D, MT>(src, qf, row_ok, all_rows, k00, k01, k10, k11);
      finish(k00, k01, k10, k11, t);
    }
    search_sync(w, local);

    // C. keep the Kb best (score descending, then smaller begin), in node order.
    if (wi == 0) {
      // Branch scores are kept only as their order-preserving keys (radix_select.h), and turned
      // back into floats for the kept ones: one array of 2 NPL registers instead of two.
      uint32_t keys[2 * NPL];
      int bb[NPL], be[NPL];
      int at = base;
#pragma unroll
      for (int j = 0; j < NPL; ++j) {
        const int node = lane * npl + j;
        keys[2 * j] = keys[2 * j + 1] = 0;
        bb[j] = be[j] = 0;
        if (j < npl && node < kb) {
          bb[j] = sm.nd_begin[node], be[j] = sm.nd_end[node];
          const float inherited = sm.nd_score[node];
          keys[2 * j] = score_key32((need_mask & (1u << (2 * j))) ? sm.list_score[at++] : inherited);
          if (be[j] - bb[j] >= 2)
            keys[2 * j + 1] = score_key32((need_mask & (2u << (2 * j))) ? sm.list_score[at++] : inherited);
        }
      }
      // The Kb-th largest key, bit by bit from the top: the largest T with count(key >= T) >= Kb.
      // Early exit once exactly Kb keys are >= the prefix found so far (usually after ~10 of the 32
      // bits): those are the Kb best and no tie crosses the boundary, so T = prefix - 1 gives the
      // same selection through the general rule below (Kb keys above it, none needed from ties).
      uint32_t thr = 0;
      int cnt_ge = nb;  // branches with key >= thr (thr = 0: all of them)
      for (int bit = 31; bit >= 0 && cnt_ge != kb; --bit) {
        const uint32_t cand = thr | (1u << bit);
        int c = 0;
#pragma unroll
        for (int i = 0; i < 2 * NPL; ++i) c += keys[i] >= cand;
        const int total = static_cast<int>(__reduce_add_sync(0xffffffffu, c));
        if (total >= kb) thr = cand, cnt_ge = total;
      }
      if (cnt_ge == kb) thr -= 1;  // thr >= 1 here: nb > Kb, so at least one bit was taken
      int c_gt = 0, c_eq = 0;
#pragma unroll
      for (int i = 0; i < 2 * NPL; ++i) c_gt += keys[i] > thr, c_eq += keys[i] == thr;
      const int need = kb - static_cast<int>(__reduce_add_sync(0xffffffffu, c_gt));
      int dummy = 0;
      int rank = warp_excl_scan(c_eq, lane, &dummy);
      uint32_t kept_mask = 0;
#pragma unroll
      for (int i = 0; i < 2 * NPL; ++i) {
        if (keys[i] > thr) kept_mask |= 1u << i;
        else if (keys[i] == thr) {
          if (rank < need) kept_mask |= 1u << i;
          ++rank;
        }
      }
      int total_kept = 0;
      int pos = warp_excl_scan(__popc(kept_mask), lane, &total_kept);
      __syncwarp();  // every lane has read its nodes before they are overwritten
      int big = 0;
#pragma unroll
      for (int j = 0; j < NPL; ++j) {
        const int m = bb[j] + (be[j] - bb[j]) / 2;
        const bool split = be[j] - bb[j] >= 2;
#pragma unroll
        for (int side = 0; side < 2; ++side) {
          const int i = 2 * j + side;
          if (!(kept_mask & (1u << i))) continue;
          const int nb0 = split ? (side ? m : bb[j]) : bb[j];
          const int ne = split ? (side ? be[j] : m) : be[j];
          sm.nd_begin[pos] = nb0, sm.nd_end[pos] = ne, sm.nd_score[pos] = score_of_key32(keys[i]);
          big = max(big, ne - nb0);
          ++pos;
        }
      }
      largest = __reduce_max_sync(0xffffffffu, big);
      if (w > 1 && lane == 0) sm.ctl[0] = largest;
    }
    search_sync(w, local);
    if (w > 1) largest = sm.ctl[0];
    ++iter;
    branch_total += nb;
  }

  if (wi == 0) {
    for (int j = lane; j < kb; j += 32) out[j] = sm.nd_begin[j];
    if (lane == 0) {
      a.counts[item] = kb;
      if (a.iterations) a.iterations[item] = iter;
      if (a.branches) a.branches[item] = branch_total;
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

bool warp_mask_eligible(const MaskLaunch& l) {
  const hip::HipParams& p = l.hip;
  if (l.dtype == ElementType::kF32 || l.traced()) return false;
  const int64_t kb = hip::hip_kb(p), kpr = p.b_k / p.b_sk;
  const int64_t rows = (std::min(p.b_q, l.tq) + p.b_sq - 1) / p.b_sq;  // of the fullest query block
  const bool kpr_ok = kpr == 1 || kpr == 2 || kpr == 4 || kpr == 8;
  const bool q16 = aligned16(l.q) && l.q_stride.t % 8 == 0 && l.q_stride.h % 8 == 0 && l.q_stride.b % 8 == 0;
  const bool k16 = aligned16(l.k) && l.k_stride.t % 8 == 0 && l.k_stride.h % 8 == 0 && l.k_stride.b % 8 == 0;
  return kb >= 1 && kb <= 32 * kMaxNpl && kpr_ok && rows <= kMaxRows && (l.d == 64 || l.d == 128) && q16 && k16 &&
         static_cast<double>(l.tk) * static_cast<double>(l.k_stride.t) < 2147483648.0 && p.b_k < (int64_t{1} << 16);
}

int warp_mask_warps_per_search(int64_t items, int64_t rows) {
  // About 32 resident warps per multiprocessor in all; one warp per search when there are enough.
  // More than 16 sampled rows (MT = 2) run in 4-warp CTAs, so at most 4 warps a search.
  const int64_t want = 32 * static_cast<int64_t>(device_sm_count());
  const int cap = rows > 16 ? kCtaWarps : kMaxW;
  int w = 1;
  while (w < cap && items * w < want) w *= 2;
  return w;
}

void estimate_masks_warp(const MaskLaunch& l, int warps_per_search) {
  const hip::HipParams& p = l.hip;
  WarpMaskArgs a{};
  a.q = l.q, a.k = l.k, a.qs = l.q_stride, a.ks = l.k_stride, a.positions = l.positions;
  a.hq = l.hq, a.hkv = l.hkv, a.tq = l.tq, a.tk = l.tk, a.d = l.d;
  a.qbs = (l.tq + p.b_q - 1) / p.b_q;
  a.items = l.batch * l.hq * a.qbs;
  a.hip = p;
  a.kb = static_cast<int>(hip::hip_kb(p));
  a.npl = (a.kb + 31) / 32;
  const int64_t kpr = p.b_k / p.b_sk;
  a.kpr_log2 = kpr == 1 ? 0 : kpr == 2 ? 1 : kpr == 4 ? 2 : 3;
  // Sampled rows of the fullest query block (decode: one query, so one m-tile and up to 16 warps).
  a.rows_max = static_cast<int>((std::min(p.b_q, l.tq) + p.b_sq - 1) / p.b_sq);
  const bool mt2 = a.rows_max > 16;
  a.w = warps_per_search > 0 ? warps_per_search : warp_mask_warps_per_search(a.items, a.rows_max);
  if (a.w < 1 || a.w > (mt2 ? kCtaWarps : kMaxW) || (a.w & (a.w - 1)))
    throw_arg("warps per search must be a power of two in [1, " + std::to_string(mt2 ? kCtaWarps : kMaxW) + "]");
  a.searches_per_cta = std::max(1, kCtaWarps / a.w);
  a.smem_per_search = (search_smem_bytes(a.kb) + 15) / 16 * 16;
  a.blocks = l.blocks, a.counts = l.counts, a.iterations = l.iterations, a.branches = l.branches;
  const int64_t ctas = (a.items + a.searches_per_cta - 1) / a.searches_per_cta;
  if (ctas >= (int64_t{1} << 31)) throw_arg("too many (batch, head, query block) items for one launch");
  const int threads = 32 * a.w * a.searches_per_cta;
  const size_t ring = static_cast<size_t>(kStages) * 16 * (l.d <= 64 ? 64 : 128) * 2;  // per warp: 16 keys a stage
  const size_t smem = static_cast<size_t>(ring_offset(a.searches_per_cta, a.smem_per_search)) + ring * (threads / 32);
  const dim3 grid(static_cast<unsigned>(ctas));
  cudaStream_t s = as_stream(l.stream);
  auto launch = [&](auto kernel) {
    set_smem(reinterpret_cast<const void*>(kernel), smem, "mask estimation (warp search)");
    kernel<<<grid, threads, smem, s>>>(a);
  };
  // One instantiation per (dtype, d, m-tiles, nodes per lane).
  auto by_npl = [&](auto t, auto d, auto mt) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value, MT = decltype(mt)::value;
    a.kb <= 256 ? launch(hip_mask_warp_kernel<T, D, MT, 8>) : launch(hip_mask_warp_kernel<T, D, MT, 16>);
  };
  auto by_mt = [&](auto t, auto d) {
    mt2 ? by_npl(t, d, std::integral_constant<int, 2>{}) : by_npl(t, d, std::integral_constant<int, 1>{});
  };
  auto by_d = [&](auto t) {
    l.d <= 64 ? by_mt(t, std::integral_constant<int, 64>{}) : by_mt(t, std::integral_constant<int, 128>{});
  };
  l.dtype == ElementType::kBF16 ? by_d(__nv_bfloat16{}) : by_d(__half{});
  HIP_CUDA_CHECK_LAUNCH("hip_mask_warp_kernel");
}

}  // namespace hipstudio::gpu
