// HiP mask estimation, few-search path (v16, kernels/BENCHMARKS.md): one CTA of 16 warps per
// search, or a thread-block cluster of 2 or 4 such CTAs on sm_90, for the bf16/f16 searches of
// <= 16 sampled query rows (decode: one query) when there are too few searches to give each a warp.
// Same semantics as kernels/mask_reference.h and the other two mask kernels.
//
// Why: the warp-search kernel (mask_warp_kernel.cu) spreads only the scoring of a decode search
// over 16 warps; splitting the nodes and selecting the Kb best ran on one warp, and ncu put ~60 % of
// a 128k decode refresh there (v15: 121 us for 32 searches of 8 iterations). Here every phase runs
// on all 512 threads, thread t owning branch slot t (node t / 2, side t % 2):
//   B. the warps score 16-key tiles exactly as in mask_warp_kernel.cu (keys as the mma B operand,
//      each lane copying its own fragments into its own ring slots); with a cluster, the search's
//      tiles are spread over its CTAs and every score is stored into each CTA's copy of the score
//      array by st.async onto that CTA's mbarrier (distributed shared memory), which the receiver
//      waits on instead of a cluster barrier;
//   C. every CTA makes the same selection redundantly (no second exchange): a radix select of the
//      Kb-th largest score key, 5 bits a pass from the top (each warp's counts of keys with a
//      digit >= v for all 32 v from 6 ballots, one CTA barrier a pass), stopping once exactly Kb
//      keys lie above the prefix (~3.5 passes at 128k); one block-wide scan then gives each kept
//      branch its next node position, ties at the threshold going by branch order; a kept branch
//      writes the slots of its two children for the next iteration (range, the representative to
//      score when it differs from its own, its score).
// An iteration is one gather round trip plus ~6 barriers, where v15 ran three phases on one warp.
// Cluster size (v16): 2 CTAs a search where they fit (50 us at 128k, batch 1, against 57 with 1);
// 4 ran in two waves, since a 4-CTA cluster must fit in one GPC.
// v17 (kernels/BENCHMARKS.md): the st.async exchange (51 against 54 us at 128k, batch 1, with the
// cluster barrier), the gather rings on a 128-byte line and a relaxed arrival at the setup's
// cluster barrier (47-49 us); the keys as the mma A operand and a radix selection seeded by the
// previous threshold were measured too and dropped (no gain).
// A decode graph's refresh (MaskLaunch::device_position / decode_rows / after_prior, 2026-11-27):
// the position read on the device, the cached steps' rows written by the search itself, and the
// set-up (slots, exchange barriers, cluster barrier) overlapping the RoPE kernel before it (and the
// q/k/v projection before that, both letting their dependents start at once), with Q loaded after
// the wait.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mask_cluster.h"
#include "kernels/cuda/mask_search.cuh"
#include "kernels/cuda/mask_warp.h"
#include "kernels/cuda/once_per_key.h"
#include "kernels/cuda/search_order.h"
#include "kernels/cuda/radix_select.h"
#include "kernels/cuda/score_exchange.h"

namespace hipstudio::gpu {
namespace {

constexpr int kWarps = 16;
constexpr int kThreads = kWarps * 32;  // one thread per branch slot: 2 Kb <= 512
constexpr int kMaxSlots = kThreads;
#ifndef HIPSTUDIO_MASK_CLUSTER_STAGES  // compile-time knob for scripts/dev/device_variants.sh
#define HIPSTUDIO_MASK_CLUSTER_STAGES 3
#endif
constexpr int kStages = HIPSTUDIO_MASK_CLUSTER_STAGES;  // per-warp ring of 16-key tiles, kStages - 1 in flight

struct ClusterMaskArgs {
  const void* q;
  const void* k;
  Strides qs, ks;
  const int64_t* positions;
  int64_t hq, hkv, tq, tk, qbs, items;
  hip::HipParams hip;
  int kb, kpr_log2, ctas;
  int32_t* blocks;
  int32_t* counts;
  int32_t* iterations;
  int64_t* branches;
  // A decode graph's refresh (MaskLaunch): the position read on the device, the rows written here.
  const int64_t* device_position;
  int32_t* rows;
  int32_t* counts_by_extra;
  int tail_room;
  bool after_prior;
};

// Shared memory of one CTA; the warps' gather rings follow it. Arrays indexed [parity] alternate
// between iterations so that an iteration never writes what the previous one may still read
// (for the scores: what another CTA of the cluster may still read).
struct ClusterSmem {
  uint64_t exchange_bar[2];      // [parity]: the other CTAs' score stores of an iteration land here (st.async)
  int slot_begin[2][kMaxSlots];  // this iteration's branch slots: range [begin, end), begin -1: no branch
  int slot_end[2][kMaxSlots];
  int slot_rep[2][kMaxSlots];    // representative block to score; -1: the branch keeps its parent's score
  float slot_inherited[2][kMaxSlots];
  float score[2][kMaxSlots];     // scores of the slots with slot_rep >= 0, from whichever CTA scored them
  int node_begin[kMaxSlots / 2]; // the kept nodes' begins, ascending: the mask after the last iteration
  // Radix passes, 3 rotating buffers: [v] keys matching the prefix with a 5-bit digit >= v.
  int digit_count[3][32];
  int warp_counts[kWarps];       // per warp: kept-above | ties << 10
  int warp_big[kWarps];          // per warp: the longest kept branch
  int warp_real[kWarps];         // per warp: real branches this iteration
};

// The warps' gather rings start on a 128-byte line (kernels/BENCHMARKS.md, v17): at 16 mod 32
// the 128k batch-1 refresh took 61.6 us, at 32 mod 128 (v16's layout, by chance) 51.4, aligned 47.9.
constexpr size_t kRingAlign = 128;
constexpr size_t kSmemHead = (sizeof(ClusterSmem) + kRingAlign - 1) / kRingAlign * kRingAlign;

// The cluster barrier before the first remote store (raw PTX: every thread reaches it converged,
// .aligned). Its arrival is relaxed: the exchange barriers' initialization is ordered by its own
// fence (exchange_init) and nothing else crosses CTAs before it, and a releasing arrival waits for
// this thread's loads in flight (v17: 47.6-48.3 us against 49.0-49.2 at 128k, batch 1). A split
// arrive / wait around the first gathers was tried too: the wait then cost as much inside the
// first iteration as the barrier had in the setup.
__device__ __forceinline__ void cluster_barrier() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// Score exchange in a cluster (v17, kernels/BENCHMARKS.md): each CTA stores the scores of its tiles
// into its own shared memory and, by st.async, into every other CTA's, where each store counts its
// 4 bytes off that CTA's exchange barrier of the iteration's parity; a CTA waits for its barrier's
// phase to complete. Each phase is armed ahead by the CTA's one arrival, announcing the bytes the
// others will send (fixed: the branch slots whose tiles they score): both parities at the start,
// then each right after its phase completed, for the iteration two ahead. The others' stores of
// that iteration cannot come earlier: they follow this CTA's stores of the iteration between,
// which this CTA sends only after every thread of it passed the wait (the selection's barriers lie
// between), so a phase never completes under a thread still waiting for the one before. A CTA
// that receives nothing (small Kb: the other CTAs own no tiles) neither arms nor waits: a phase of
// 0 bytes would complete at its arming, under threads still waiting on the previous parity.
// This replaces a cluster barrier an iteration, whose release is a GPU-wide memory fence (ncu, v16).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
#endif

// The local arrival that arms a phase: `bytes` will come from the other CTAs.
__device__ __forceinline__ void exchange_expect(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.release.cluster.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(
                   smem_addr(bar)),
               "r"(bytes)
               : "memory");
#endif
}

// One arrival a phase. Before the cluster barrier that precedes every remote store.
__device__ __forceinline__ void exchange_init(uint64_t* bars) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  for (int i = 0; i < 2; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bars + i)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void exchange_wait(uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned addr = smem_addr(bar);
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// Ends the barriers' life before the CTA exits and its shared memory goes to the next CTA (every
// phase it waits for has completed, so no store is still on its way).
__device__ __forceinline__ void exchange_inval(uint64_t* bars) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  for (int i = 0; i < 2; ++i) asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bars + i)) : "memory");
#endif
}

// Stores v at `local` in this CTA and, by st.async counted off their barrier `bar` (this CTA's
// address of it), at the same place in every other CTA of the cluster.
__device__ __forceinline__ void store_everywhere(float* local, float v, int ctas, int rank, uint64_t* bar) {
  *local = v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned addr = smem_addr(local), bar_addr = smem_addr(bar);
  for (int r = 0; r < ctas; ++r) {
    if (r == rank) continue;
    asm volatile(
        "{\n.reg .b32 remote, rbar;\nmapa.shared::cluster.u32 remote, %0, %1;\nmapa.shared::cluster.u32 rbar, %2, %1;\n"
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [remote], %3, [rbar];\n}\n" ::"r"(addr),
        "r"(r), "r"(bar_addr), "r"(__float_as_uint(v))
        : "memory");
  }
#else
  (void)ctas, (void)rank, (void)bar;
#endif
}

// Exclusive prefix over the 16 warps of per-warp totals `x` (lane i < 16 holds warp i's): warp w's
// offset, and the total.
__device__ __forceinline__ int warps_exclusive(int x, int lane, int warp, int* total) {
  int inc = x;
#pragma unroll
  for (int o = 1; o < kWarps; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += y;
  }
  *total = __shfl_sync(0xffffffffu, inc, kWarps - 1);
  return __shfl_sync(0xffffffffu, inc - x, warp);
}

// Lane v gets how many of its warp's keys match the prefix (`match`) with a 5-bit `digit` >= v:
// bit-serially from the top digit bit, `equal` keeps the lanes' keys whose digit bits so far equal
// v's, `greater` those already above v (6 ballots, no scan over lanes).
__device__ __forceinline__ int count_digits_at_least(bool match, uint32_t digit, int lane) {
  uint32_t equal = __ballot_sync(0xffffffffu, match), greater = 0;
#pragma unroll
  for (int b = 4; b >= 0; --b) {
    const uint32_t one = __ballot_sync(0xffffffffu, (digit >> b) & 1u);
    if ((lane >> b) & 1) {
      equal &= one;
    } else {
      greater |= equal & one;
      equal &= ~one;
    }
  }
  return __popc(greater | equal);
}

// Where a selection cuts: keys > thr are kept, and the first `need` keys == thr in branch order;
// gt_base / eq_base: keys > thr / == thr in the warps before this one.
struct Cut {
  uint32_t thr;
  int need, gt_base, eq_base;
};

// The buffer after `b` of the 3 rotating count buffers: the next pass's, last read two passes
// ago, before the previous barrier, so it can be cleared during this pass.
__device__ __forceinline__ int next_count_buffer(int b) { return b == 2 ? 0 : b + 1; }

// After a pass's barrier, lane v holding `cum` (keys matching with a digit >= v): the Kb-th key's
// digit, the largest with above + cum >= Kb (digit 0 always qualifies: invariant), and the counts
// of keys with a digit >= it and > it.
struct Digit {
  int best, at_least, above;
};
__device__ __forceinline__ Digit kth_key_digit(int cum, int above, int kb) {
  const uint32_t fits = __ballot_sync(0xffffffffu, above + cum >= kb);
  Digit d;
  d.best = 31 - __clz(fits);
  d.at_least = __shfl_sync(0xffffffffu, cum, d.best);
  const int after = __shfl_sync(0xffffffffu, cum, (d.best + 1) & 31);
  d.above = d.best == 31 ? 0 : after;
  return d;
}

// Radix select of the Kb-th largest key T (v16), 5 bits a pass from the top (27, 22, ..., 2, then
// the last 2): `prefix` holds T's digits found so far, `above` counts the keys whose digits found so
// far exceed T's. Lane v of each warp counts its warp's keys that match the prefix with a digit >=
// v into shared counters; after the barrier lane v of every warp reads the count for v, and the
// largest v whose count still reaches Kb is T's digit (the counts are cumulative already). Stops
// once exactly Kb keys are >= the prefix: they are the Kb best and no tie crosses the boundary.
// Then one more barrier for the per-warp counts of the cut.
__device__ Cut select_from_top(ClusterSmem& sm, uint32_t key, int kb, int lane, int warp, int& count_buf) {
  uint32_t prefix = 0;
  int above = 0;
  bool exact = false;
  int shift = 27, bits = 5;
#pragma unroll 1
  do {
    const PassDigit pd = radix_pass_digit(key, prefix, shift, bits);
    const int c = count_digits_at_least(pd.match, pd.digit, lane);
    if (c) atomicAdd(&sm.digit_count[count_buf][lane], c);
    const int next_buf = next_count_buffer(count_buf);
    if (warp == 0) sm.digit_count[next_buf][lane] = 0;
    __syncthreads();
    const Digit d = kth_key_digit(sm.digit_count[count_buf][lane], above, kb);
    count_buf = next_buf;
    prefix |= static_cast<uint32_t>(d.best) << shift;
    if (above + d.at_least == kb) {
      exact = true;
      break;
    }
    above += d.above;
  } while (next_radix_digit(shift, bits));
  Cut cut;
  cut.thr = exact ? prefix - 1 : prefix;  // exact: prefix >= 1 (Kb < branches)
  cut.need = exact ? 0 : kb - above;
  const uint32_t bgt = __ballot_sync(0xffffffffu, key > cut.thr), beq = __ballot_sync(0xffffffffu, key == cut.thr);
  if (lane == 0) sm.warp_counts[warp] = __popc(bgt) | __popc(beq) << 10;  // each <= 512
  __syncthreads();
  int totals = 0;
  const int bases = warps_exclusive(lane < kWarps ? sm.warp_counts[lane] : 0, lane, warp, &totals);
  cut.gt_base = bases & 1023, cut.eq_base = (bases >> 10) & 1023;
  return cut;
}

// Compile-time knob for scripts/dev/device_variants.sh: -DHIPSTUDIO_MASK_CLUSTER_CLOCKS has thread 0
// of the launch's first CTA note clock64() at each phase of its search and print the cycles of
// its 200th launch (warm), so that the refresh's time can be split by phase (kernels/BENCHMARKS.md).
#ifdef HIPSTUDIO_MASK_CLUSTER_CLOCKS
__device__ long long g_phase_clock[64];
__device__ unsigned g_phase_launches;
#define PHASE_CLOCK(slot) \
  if (blockIdx.x == 0 && threadIdx.x == 0 && (slot) < 64) g_phase_clock[slot] = clock64()
__device__ void print_phase_clocks(int iterations) {
  if (blockIdx.x != 0 || threadIdx.x != 0 || atomicAdd(&g_phase_launches, 1u) != 199) return;
  const long long* c = g_phase_clock;
  printf("phase clocks (cycles): setup %lld\n", c[1] - c[0]);
  for (int i = 0; i < iterations && 2 + 4 * i + 3 < 60; ++i) {
    const long long* t = c + 2 + 4 * i;
    const long long before = i == 0 ? c[1] : t[-1];
    printf("  iteration %d: score %lld exchange %lld select %lld children %lld\n", i, t[0] - before, t[1] - t[0],
           t[2] - t[1], t[3] - t[2]);
  }
  printf("  end %lld, total %lld\n", c[61] - c[60], c[61] - c[0]);
}
#else
#define PHASE_CLOCK(slot)
#endif

// The refreshed mask as build_decode_rows lays it out (decode_rows.h): the search's `count` blocks
// (block_at(c), ascending), then the dense tail from tail_start, then -1; and the counts of each
// cached step after it. One decode query per item, so item = head.
template <class BlockAt>
__device__ void write_decode_rows(const ClusterMaskArgs& a, int64_t item, int count, int64_t tail_start, int tid,
                                  BlockAt block_at) {
  const int width = a.kb + a.tail_room;
  int32_t* row = a.rows + item * width;
  for (int c = tid; c < width; c += kThreads)
    row[c] = c < count ? block_at(c) : c < count + a.tail_room ? static_cast<int32_t>(tail_start + (c - count)) : -1;
  for (int e = tid; e <= a.tail_room; e += kThreads) a.counts_by_extra[static_cast<int64_t>(e) * a.items + item] = count + e;
}

template <class T, int D>
__global__ void __launch_bounds__(kThreads, 1) hip_mask_cluster_kernel(const ClusterMaskArgs a) {
  constexpr int KS = D / 16;          // k-steps per key row
  constexpr int PL = D / 32;          // 16-byte pieces of a key row that one lane gathers
  constexpr int STAGE = 2 * PL * 32;  // ring stage: 16 keys, in uint4 (lane-private slots)
  extern __shared__ __align__(128) uint8_t smem[];
  ClusterSmem& sm = *reinterpret_cast<ClusterSmem*>(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gq = lane >> 2, cq = lane & 3;
  const int ctas = a.ctas;
  const int rank = static_cast<int>(blockIdx.x & (ctas - 1));  // cluster dims (ctas, 1, 1); ctas 1, 2 or 4
  const int64_t s = blockIdx.x >> (ctas >> 1);
  if (s >= a.items) return;  // the whole cluster together
  uint4* ring_lane = reinterpret_cast<uint4*>(smem + kSmemHead) + warp * kStages * STAGE + lane;

  PHASE_CLOCK(0);
  const SearchCoords sc = search_coords(s, a.hq, a.hkv, a.qbs);
  const int kb = a.kb;
  int32_t* out = a.blocks ? a.blocks + sc.item * kb : nullptr;
  // A graph's refresh reads its position here: the host wrote it before the graph started, so
  // before the kernel this one may overlap.
  const int64_t tk = a.device_position ? *a.device_position + 1 : a.tk;
  const DevRange sr = dev_search_range(a.hip, a.positions, a.tq, tk, sc.qb);
  const int64_t n = sr.hi - sr.lo;
  if (n <= kb) {  // the whole range fits in the budget
    wait_for_prior_grid();  // no output before the kernel before has ended (a no-op in a plain launch)
    if (rank == 0) {
      if (out)
        for (int j = tid; j < kb; j += kThreads) out[j] = j < n ? static_cast<int32_t>(sr.lo + j) : -1;
      if (tid == 0) {
        if (a.counts) a.counts[sc.item] = static_cast<int32_t>(n);
        if (a.iterations) a.iterations[sc.item] = 0;
        if (a.branches) a.branches[sc.item] = 0;
      }
      if (a.rows)
        write_decode_rows(a, sc.item, static_cast<int>(n), sr.hi, tid,
                          [&](int c) { return static_cast<int32_t>(sr.lo + c); });
    }
    return;
  }

  const int64_t g = sc.g;
  const int b_sq = static_cast<int>(a.hip.b_sq);  // <= b_q <= INT32_MAX; 32-bit divisions below
  const int R = (static_cast<int>(sr.row_end - sr.row_begin) + b_sq - 1) / b_sq;
  const T* qbase = static_cast<const T*>(a.q) + sc.b * a.qs.b + sc.h * a.qs.h;
  const T* klane = static_cast<const T*>(a.k) + sc.b * a.ks.b + g * a.ks.h + cq * 8;
  const int kpr_log2 = a.kpr_log2, kpr = 1 << kpr_log2;
  const int b_k = static_cast<int>(a.hip.b_k), b_sk = static_cast<int>(a.hip.b_sk);
  const int k_row = static_cast<int>(a.ks.t);  // eligibility: tk * k_row < 2^31
  const double rho = a.hip.rho;

  // Q as the A operand, one m-tile of 16 sampled rows (mask_search.cuh); its loads overlap the
  // slots' arithmetic below. A dependent launch loads it after the set-up instead, once the kernel
  // before (the query's RoPE and cache write) has ended: the set-up then overlaps that kernel.
  uint32_t qf[1][KS][4];
  const T* q_row0 = qbase + sr.row_begin * a.qs.t;
  if (!a.after_prior) load_q_mtile<T, D>(qf[0], q_row0, a.hip.b_sq * a.qs.t, R, 0, lane);

  // Initial slots: node t / 2 of Kb (nearly) equal nodes, side t % 2; every representative is new.
  {
    int cb = -1, ce = -1, rep = -1;
    const int node = tid >> 1;
    if (node < kb) {
      const int nb0 = initial_node_start(sr.lo, n, kb, node), ne = initial_node_start(sr.lo, n, kb, node + 1);
      const int m = nb0 + (ne - nb0) / 2;
      if (ne - nb0 >= 2) cb = (tid & 1) ? m : nb0, ce = (tid & 1) ? ne : m;
      else if (!(tid & 1)) cb = nb0, ce = ne;
      if (cb >= 0) rep = repr_of(cb, ce, rho);
    }
    sm.slot_begin[0][tid] = cb, sm.slot_end[0][tid] = ce, sm.slot_rep[0][tid] = rep, sm.slot_inherited[0][tid] = 0.f;
    // Parity 1: kept branches rewrite slots [0, 2 Kb) every iteration; the ones past stay empty.
    sm.slot_begin[1][tid] = -1, sm.slot_end[1][tid] = -1, sm.slot_rep[1][tid] = -1, sm.slot_inherited[1][tid] = 0.f;
    if (tid < 3 * 32) (&sm.digit_count[0][0])[tid] = 0;
  }

  const uint32_t row_ok = real_rows_mask<1>(R, lane);
  const int pairs = (2 * kb) << kpr_log2;  // sampled keys of all slots (empty ones are not read)
  const int tiles = (pairs + 15) >> 4;
  const int first_tile = rank * kWarps + warp, tile_stride = ctas * kWarps;
  // Bytes of scores the other CTAs send this one an iteration: every slot < 2 Kb whose first key's
  // tile another CTA scores (score_exchange.h; tile t is CTA (t / kWarps) % ctas's, as below).
  static_assert(kWarps == 16, "score_owner_cta deals tiles out 16 at a time");
  const bool remote = ctas > 1 && tid < 2 * kb && score_owner_cta(tid, kpr_log2, ctas) != rank;
  const unsigned expect_bytes = 4u * static_cast<unsigned>(__syncthreads_count(remote));  // also: slots written
  if (ctas > 1) {
    if (tid == 0 && expect_bytes > 0) exchange_init(sm.exchange_bar);
    cluster_barrier();  // every CTA's exchange barriers are initialized: remote stores may start
    // Both parities armed for the first two iterations, after the cluster barrier: racecheck
    // reported arming before it (the same thread's init, then arrival) as a race. A store that
    // lands before its phase is armed counts all the same; the phase cannot complete without this
    // arrival.
    if (tid == 0 && expect_bytes > 0)
      for (int i = 0; i < 2; ++i) exchange_expect(sm.exchange_bar + i, expect_bytes);
  }
  if (a.after_prior) {
    wait_for_prior_grid();  // Q and the new key are written; the gathers below read K
    load_q_mtile<T, D>(qf[0], q_row0, a.hip.b_sq * a.qs.t, R, 0, lane);
  }

  int largest = static_cast<int>((static_cast<uint32_t>(n) + kb - 1) / kb);  // n < 2^31: blocks below tk
  int iter = 0, count_buf = 0;
  int64_t branch_total = 0;

  PHASE_CLOCK(1);
  while (largest > 1) {
    const int cur = iter & 1, nxt = cur ^ 1;
    const int my_begin = sm.slot_begin[cur][tid], my_end = sm.slot_end[cur][tid], my_rep = sm.slot_rep[cur][tid];
    const float my_inherited = sm.slot_inherited[cur][tid];

    // B. score this CTA's tiles of 16 sampled keys (kStages - 1 in flight per warp).
    uint64_t* bar = &sm.exchange_bar[cur];  // the other CTAs' copies of it count the async exchange
    auto issue = [&](int t, int stage) {
      uint4* dst = ring_lane + stage * STAGE;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int p = t * 16 + nt * 8 + gq;
        const int rep = p < pairs ? sm.slot_rep[cur][p >> kpr_log2] : -1;
        const bool ok = rep >= 0;
        const int key = ok ? rep * b_k + (p & (kpr - 1)) * b_sk : 0;
        const T* src = klane + key * k_row;  // eligibility: tk * k_row < 2^31
#pragma unroll
        for (int j = 0; j < PL; ++j) cp_async16(dst + (nt * PL + j) * 32, src + 32 * j, ok);
      }
    };
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
      const int t = first_tile + i * tile_stride;
      if (t < tiles) issue(t, i);
      cp_async_commit();
    }
    for (int t = first_tile, stage = 0, next = kStages - 1; t < tiles; t += tile_stride) {
      const int tn = t + (kStages - 1) * tile_stride;
      if (tn < tiles) issue(tn, next);
      cp_async_commit();
      cp_async_wait<kStages - 1>();  // this lane's copies of tile t landed
      const uint4* src = ring_lane + stage * STAGE;
      stage = stage + 1 == kStages ? 0 : stage + 1;
      next = next + 1 == kStages ? 0 : next + 1;
      float k00, k01, k10, k11;
      score_tile<T, D, 1>(src, qf, row_ok, R >= 16, k00, k01, k10, k11);
      int pair = 0;
      const float m = tile_branch_score(k00, k01, k10, k11, kpr_log2, lane, &pair);
      const int p = t * 16 + pair;
      if (pair >= 0 && p < pairs) store_everywhere(&sm.score[cur][p >> kpr_log2], m, ctas, rank, bar);
    }
    cp_async_wait<0>();  // no copy of an unused tile index still lands in the ring
    PHASE_CLOCK(2 + 4 * iter);
    __syncthreads();  // this CTA's own scores
    if (expect_bytes > 0) {  // ctas > 1: the other CTAs' scores
      exchange_wait(&sm.exchange_bar[cur], static_cast<unsigned>(iter >> 1) & 1u);
      if (tid == 0) exchange_expect(&sm.exchange_bar[cur], expect_bytes);  // for iteration iter + 2
    }

    // C. select the Kb best (score descending, then branch order = ascending begin).
    const bool real = my_begin >= 0;
    const float my_score = my_rep >= 0 ? sm.score[cur][tid] : my_inherited;
    const uint32_t key = real ? score_key32(my_score) : 0u;  // real keys >= 0x007fffff (-inf)
    PHASE_CLOCK(3 + 4 * iter);
    const Cut cut = select_from_top(sm, key, kb, lane, warp, count_buf);
    PHASE_CLOCK(4 + 4 * iter);
    const int need = cut.need;
    const bool gt = key > cut.thr, eq = key == cut.thr;
    const uint32_t bgt = __ballot_sync(0xffffffffu, gt), beq = __ballot_sync(0xffffffffu, eq);
    const uint32_t before = (1u << lane) - 1u;
    const int gt_rank = cut.gt_base + __popc(bgt & before), eq_rank = cut.eq_base + __popc(beq & before);
    const bool kept = gt || (eq && eq_rank < need);
    int big = 0;
    if (kept) {
      const int pos = gt_rank + min(need, eq_rank);  // kept branches before this one
      const int len = my_end - my_begin;
      const int own = repr_of(my_begin, my_end, rho);  // scored here or inherited: the same block
      sm.node_begin[pos] = my_begin;
      const int c0 = 2 * pos, c1 = c0 + 1;
      if (len >= 2) {
        const int m = my_begin + len / 2;
        const int r0 = repr_of(my_begin, m, rho), r1 = repr_of(m, my_end, rho);
        sm.slot_begin[nxt][c0] = my_begin, sm.slot_end[nxt][c0] = m, sm.slot_rep[nxt][c0] = r0 != own ? r0 : -1;
        sm.slot_begin[nxt][c1] = m, sm.slot_end[nxt][c1] = my_end, sm.slot_rep[nxt][c1] = r1 != own ? r1 : -1;
      } else {
        sm.slot_begin[nxt][c0] = my_begin, sm.slot_end[nxt][c0] = my_end, sm.slot_rep[nxt][c0] = -1;
        sm.slot_begin[nxt][c1] = -1, sm.slot_end[nxt][c1] = -1, sm.slot_rep[nxt][c1] = -1;
      }
      sm.slot_inherited[nxt][c0] = my_score, sm.slot_inherited[nxt][c1] = my_score;
      big = len;
    }
    big = __reduce_max_sync(0xffffffffu, big);
    const int reals = __popc(__ballot_sync(0xffffffffu, real));
    if (lane == 0) sm.warp_big[warp] = big, sm.warp_real[warp] = reals;
    __syncthreads();
    largest = __reduce_max_sync(0xffffffffu, lane < kWarps ? sm.warp_big[lane] : 0);
    branch_total += __reduce_add_sync(0xffffffffu, lane < kWarps ? sm.warp_real[lane] : 0);
    PHASE_CLOCK(5 + 4 * iter);
    ++iter;
  }
  PHASE_CLOCK(60);

  if (tid == 0 && expect_bytes > 0) exchange_inval(sm.exchange_bar);  // every thread passed its last wait
  if (rank == 0) {
    if (out)
      for (int j = tid; j < kb; j += kThreads) out[j] = sm.node_begin[j];
    if (tid == 0) {
      if (a.counts) a.counts[sc.item] = kb;
      if (a.iterations) a.iterations[sc.item] = iter;
      if (a.branches) a.branches[sc.item] = branch_total;
    }
    if (a.rows) write_decode_rows(a, sc.item, kb, sr.hi, tid, [&](int c) { return sm.node_begin[c]; });
  }
  PHASE_CLOCK(61);
#ifdef HIPSTUDIO_MASK_CLUSTER_CLOCKS
  print_phase_clocks(iter);
#endif
}

// A launch of `grid` CTAs of kThreads in clusters of `ctas` (the occupancy query and the launch
// take the same description). Not copyable: cfg points at attr.
// after_prior: also a programmatic dependent of the kernel before it (the code must wait for it).
struct ClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[2]{};
  ClusterLaunch(int64_t grid, int ctas, size_t smem, cudaStream_t stream, bool after_prior = false) {
    cfg.gridDim = dim3(static_cast<unsigned>(grid));
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(ctas), attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr, cfg.numAttrs = after_prior ? 2 : 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// How many `ctas`-CTA clusters of `kernel` can be resident at once (cudaOccupancyMaxActiveClusters:
// a cluster's CTAs must share a GPC, so fewer than SMs / ctas may fit), asked once per (kernel, ctas).
int cluster_capacity(const void* kernel, int ctas, size_t smem) {
  static OncePerKey<std::pair<const void*, int>, int> known;
  return known.get(std::make_pair(kernel, ctas), [&] {
    ClusterLaunch launch(ctas, ctas, smem, nullptr);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.cfg) != cudaSuccess) {
      cudaGetLastError();  // a refusal is an answer here (no clusters of that size), not an error to keep
      clusters = 0;
    }
    return clusters;
  });
}

// HIPSTUDIO_MASK_CTAS=0/1/2/4 in the environment overrides the choice (0: the warp-search kernel),
// so that one `bench kernels` binary can compare them on one GPU (kernels/BENCHMARKS.md, v16).
int forced_ctas() {
  static const int forced = [] {
    const char* e = std::getenv("HIPSTUDIO_MASK_CTAS");
    if (!e || !*e) return -1;
    const std::string v = e;
    if (v != "0" && v != "1" && v != "2" && v != "4")
      throw_arg("HIPSTUDIO_MASK_CTAS must be 0 (warp-search kernel), 1, 2 or 4 (CTAs per search), not '" + v +
                "'; unset it for the automatic choice");
    return std::atoi(e);
  }();
  return forced;
}

}  // namespace

bool cluster_mask_eligible(const MaskLaunch& l) {
  if (!warp_mask_eligible(l)) return false;
  const hip::HipParams& p = l.hip;
  const int64_t rows = (std::min(p.b_q, l.tq) + p.b_sq - 1) / p.b_sq;
  return rows <= 16 && 2 * hip::hip_kb(p) <= kMaxSlots;
}

int cluster_mask_ctas_per_search(int64_t items) {
  if (forced_ctas() >= 0) return forced_ctas();
  // v16 (kernels/BENCHMARKS.md): one CTA per search beat the warp-search kernel's 8 warps at 1024
  // decode searches (batch 32); a 2-CTA cluster beat 1 CTA where 2 per search fit on the SMs, and 4
  // ran two waves at 32 searches (not all 4-CTA clusters fit the GPCs at once).
  const int64_t sms = device_sm_count();
  if (items > 8 * sms) return 0;  // enough searches for the warp-search kernel
  return items * 2 <= sms && device_supports_clusters() ? 2 : 1;
}

void estimate_masks_cluster(const MaskLaunch& l, int ctas) {
  const hip::HipParams& p = l.hip;
  if (ctas != 1 && ctas != 2 && ctas != 4) throw_arg("CTAs per search must be 1, 2 or 4");
  if (ctas > 1 && !device_supports_clusters()) ctas = 1;
  ClusterMaskArgs a{};
  a.q = l.q, a.k = l.k, a.qs = l.q_stride, a.ks = l.k_stride, a.positions = l.positions;
  a.hq = l.hq, a.hkv = l.hkv, a.tq = l.tq, a.tk = l.tk;
  a.qbs = (l.tq + p.b_q - 1) / p.b_q;
  a.items = l.batch * l.hq * a.qbs;
  a.hip = p;
  a.kb = static_cast<int>(hip::hip_kb(p));
  const int64_t kpr = p.b_k / p.b_sk;
  a.kpr_log2 = kpr == 1 ? 0 : kpr == 2 ? 1 : kpr == 4 ? 2 : 3;
  a.blocks = l.blocks, a.counts = l.counts, a.iterations = l.iterations, a.branches = l.branches;
  a.device_position = l.device_position;
  a.rows = l.decode_rows, a.counts_by_extra = l.counts_by_extra, a.tail_room = static_cast<int>(l.tail_room);
  const bool d64 = l.d <= 64;
  const size_t smem = kSmemHead + static_cast<size_t>(kWarps) * kStages * 16 * (d64 ? 64 : 128) * 2;
  cudaStream_t stream = as_stream(l.stream);
  auto launch = [&](auto kernel) {
    const void* fn = reinterpret_cast<const void*>(kernel);
    set_smem(fn, smem, "mask estimation (cluster search)");
    while (ctas > 1 && cluster_capacity(fn, ctas, smem) < 1) ctas /= 2;
    a.ctas = ctas;
    const int64_t ctas_total = a.items * ctas;
    if (ctas_total >= (int64_t{1} << 31)) throw_arg("too many (batch, head, query block) items for one launch");
    // Dependent only where the loaded code waits (an sm_80 build run on sm_90 would not).
    a.after_prior = l.after_prior && kernel_waits_for_prior_grid(fn);
    if (ctas == 1) {
      if (a.after_prior) launch_after_prior(kernel, dim3(static_cast<unsigned>(ctas_total)), dim3(kThreads), smem, stream, a);
      else kernel<<<dim3(static_cast<unsigned>(ctas_total)), kThreads, smem, stream>>>(a);
    } else {
      ClusterLaunch cluster(ctas_total, ctas, smem, stream, a.after_prior);
      HIP_CUDA_CHECK(cudaLaunchKernelEx(&cluster.cfg, kernel, a));
    }
  };
  auto launch_dtype = [&](auto zero) {
    using T = decltype(zero);
    if (d64) launch(hip_mask_cluster_kernel<T, 64>);
    else launch(hip_mask_cluster_kernel<T, 128>);
  };
  if (l.dtype == ElementType::kBF16) launch_dtype(__nv_bfloat16{});
  else launch_dtype(__half{});
  HIP_CUDA_CHECK_LAUNCH("hip_mask_cluster_kernel");
}

}  // namespace hipstudio::gpu
