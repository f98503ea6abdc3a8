// HiP mask estimation on the GPU (kernels/mask_reference.h is the CPU reference it must match).
//
// The bf16/f16 shapes that mask_warp_kernel.cu covers (Kb <= 512, <= 32 sampled rows, d 64/128,
// no trace) run there (v8-v13: one warp per search, no CTA barriers), or, with <= 16 sampled rows
// and few searches (decode), in mask_cluster_kernel.cu (v16: a CTA or 2-CTA cluster per search).
// This file keeps every other case: float32 (exact float64 scores), traces, large Kb, other head
// dimensions.
// CTA kernel (v5, kernels/BENCHMARKS.md has the path): one CTA of 256 threads per (batch,
// head, query block), every query block and head in one launch; grid order head-within-group
// fastest, then query block (longest searches first), then KV group, so that the CTAs resident at
// one time gather from one group's K, which L2 holds. Per iteration:
//   1. split the Kb nodes into <= 2 Kb branches (block scan of the split counts);
//   2. representative per branch; branches whose representative differs from the inherited one
//      are compacted into a list and scored chunk by chunk: the sampled key rows of a chunk are
//      gathered into shared memory and multiplied with the sampled query rows (kept in shared
//      memory for the whole search);
//        f32 inputs  : float64 dots in the fixed order of dot_f64.h (bit-identical scores);
//        bf16 / f16  : mma.m16n8k16 tensor cores, float32 accumulation; chunks of 64 keys (256
//                      when few CTAs run, i.e. decode) gathered by cp.async, two stages; with <= 2
//                      sampled keys per branch the lanes holding a branch's keys write its score;
//   3. selection of the Kb best without sorting: the Kb-th largest score key by 8-bit radix
//      selection (histogram per digit), then the branches above it plus the first (by begin) of
//      those equal to it are kept: exactly the reference's order "score descending, then smaller
//      begin", ties included;
//   4. kept branches, compacted in ascending begin, become the next nodes.
#include <algorithm>
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mask_cluster.h"
#include "kernels/cuda/mask_warp.h"
#include "kernels/cuda/search_order.h"

namespace hipstudio::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxKb = 1024;                 // 2 Kb branches, 8 per thread: keys stay in registers
constexpr int kMaxPer = 2 * kMaxKb / kThreads;
constexpr int kMaxIter = 32;                 // N < 2^31 blocks: at most 31 halvings
constexpr int kChunkFast = 64;               // keys per scoring chunk, tensor-core path: 8 n-tiles, 1 per warp
constexpr int kChunkFastFew = 256;           // same when few CTAs run (decode): 4x the bytes in flight per CTA
constexpr int kStages = 2;                   // gather pipeline depth (v4 tried 4 at 2 CTAs/SM: slower, see BENCHMARKS.md)
constexpr int kChunkExact = 64;              // keys per chunk, float64 path: 4 threads per key

struct TraceEntry {
  int32_t begin, end, repr, kept;
  double score;
};

// Trace buffer: int32 iterations, int32 branches[kMaxIter], int32 init_begin[kb], init_end[kb],
// then (8-aligned) TraceEntry entries[kMaxIter][2 kb].
__host__ __device__ inline size_t trace_entries_offset(int64_t kb) {
  const size_t ints = 1 + kMaxIter + 2 * static_cast<size_t>(kb);
  return (ints * 4 + 7) / 8 * 8;
}

struct Smem {  // byte offsets into dynamic shared memory
  size_t br_score, nd_score, key_score, br_begin, br_end, br_repr, nd_begin, nd_end, nd_repr, scan, flag, list, red,
      sq, sk, hist, total;
};

struct MaskArgs {
  const void* q;
  const void* k;
  Strides qs, ks;
  const int64_t* positions;
  int64_t hq, hkv, tq, tk, d, qbs, kb;
  hip::HipParams hip;
  int32_t* blocks;
  int32_t* counts;
  int32_t* iterations;
  int64_t* branches;
  int64_t trace_batch, trace_head, trace_qb;
  bool trace_every_head;
  size_t trace_stride;  // bytes between heads' traces (trace_every_head)
  uint8_t* trace;
  Smem sm;
  int r_max;      // sampled rows of a full query block
  int r16;        // rows padded to 16 (tensor-core path)
  int d16;        // d padded to 16
  int q_ld, k_ld; // shared-memory row strides (elements)
  int chunk;      // keys per scoring chunk (tensor-core path)
  bool vec_ok;    // 16-byte loads allowed (d % 8 == 0 and aligned rows, 16-bit types)
};

Smem layout(int64_t kb, bool exact, int r_max, int r16, int d16, int q_ld, int k_ld, int fast_chunk) {
  Smem s{};
  size_t off = 0;
  auto take = [&](size_t bytes) {
    const size_t at = off;
    off = (off + bytes + 15) / 16 * 16;
    return at;
  };
  const size_t nb = 2 * static_cast<size_t>(kb);
  const int chunk = exact ? kChunkExact : fast_chunk;
  s.br_score = take(nb * 8);
  s.nd_score = take(kb * 8);
  s.key_score = take(chunk * 8);
  s.br_begin = take(nb * 4);
  s.br_end = take(nb * 4);
  s.br_repr = take(nb * 4);
  s.nd_begin = take(kb * 4);
  s.nd_end = take(kb * 4);
  s.nd_repr = take(kb * 4);
  s.scan = take(nb * 4);
  s.flag = take(nb * 4);
  s.list = take(nb * 4);
  s.red = take(2 * 32 * 4);
  s.hist = take((256 + 2) * 4);
  if (exact) {
    s.sq = take(static_cast<size_t>(r_max) * q_ld * 4);
    s.sk = take(static_cast<size_t>(chunk) * k_ld * 4);
  } else {
    s.sq = take(static_cast<size_t>(r16) * q_ld * 2);
    s.sk = take(kStages * static_cast<size_t>(chunk) * k_ld * 2);  // pipeline stages
  }
  (void)d16;
  s.total = off;
  return s;
}

// ---- block-wide helpers (256 threads); `red` holds two 32-int slots used alternately, so that a
// slot is rewritten only after every thread has passed the barrier of the following call.
__device__ int block_sum(int v, int* red, int& parity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = __reduce_add_sync(0xffffffffu, v);
  int* slot = red + parity * 32;
  if (lane == 0) slot[warp] = v;
  __syncthreads();
  int total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += slot[w];
  parity ^= 1;
  return total;
}

__device__ int block_max(int v, int* red, int& parity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = __reduce_max_sync(0xffffffffu, v);
  int* slot = red + parity * 32;
  if (lane == 0) slot[warp] = v;
  __syncthreads();
  int best = slot[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) best = max(best, slot[w]);
  parity ^= 1;
  return best;
}

// In-place exclusive scan of a[0, len) (written before a barrier); returns the total. Each thread
// scans a contiguous segment; ends with a barrier so the results are visible.
__device__ int block_scan(int* a, int len, int* red, int& parity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int per = (len + kThreads - 1) / kThreads;
  const int b = min(static_cast<int>(threadIdx.x) * per, len), e = min(b + per, len);
  int s = 0;
  for (int i = b; i < e; ++i) s += a[i];
  int x = s;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  int* slot = red + parity * 32;
  if (lane == 31) slot[warp] = x;
  __syncthreads();
  int before = 0, total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int t = slot[w];
    if (w < warp) before += t;
    total += t;
  }
  int run = before + x - s;
  for (int i = b; i < e; ++i) {
    const int v = a[i];
    a[i] = run;
    run += v;
  }
  parity ^= 1;
  __syncthreads();
  return total;
}

// Order-preserving key of a score: larger score, larger key. Exact path: all 64 bits of the
// double; tensor-core path: the float's 32 bits in the upper half.
template <bool kExact>
__device__ __forceinline__ uint64_t score_key(double s) {
  if (s == 0.0) s = 0.0;  // -0 and +0 tie, as in the reference's comparison
  if constexpr (kExact) {
    const uint64_t u = static_cast<uint64_t>(__double_as_longlong(s));
    return (u >> 63) ? ~u : (u | (1ull << 63));
  } else {
    const uint32_t u = __float_as_uint(static_cast<float>(s));
    const uint32_t k = (u >> 31) ? ~u : (u | 0x80000000u);
    return static_cast<uint64_t>(k) << 32;
  }
}

// NaN-ignoring max (NaN compares false), as max_dot_rows_f64.
template <class F>
__device__ __forceinline__ F nan_max(F best, F v) { return v > best ? v : best; }

// The k-th largest of the branch keys (k >= 1), by radix selection on 8-bit digits from the top:
// per digit a 256-bin histogram of the keys that match the digits found so far, then one warp finds
// the bin holding the k-th largest. 3 barriers per digit (4 digits for float32 keys, 8 for float64)
// instead of one per bit. Keys below low_bit are zero.
__device__ __forceinline__ uint64_t kth_largest_key(const uint64_t* keys, int nb, int k, int low_bit, int* hist) {
  const int tid = threadIdx.x, lane = tid & 31;
  int* bcast = hist + 256;
  uint64_t prefix = 0, mask = 0;
  for (int shift = 56; shift >= low_bit; shift -= 8) {
    hist[tid] = 0;  // kThreads == 256 bins
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int i = tid + j * kThreads;
      if (i < nb && (keys[j] & mask) == prefix) atomicAdd(&hist[(keys[j] >> shift) & 255], 1);
    }
    __syncthreads();
    if (tid < 32) {
      int own = 0;
#pragma unroll
      for (int b = 0; b < 8; ++b) own += hist[lane * 8 + b];
      int x = own;  // sum over lanes >= lane
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_down_sync(0xffffffffu, x, o);
        if (lane + o < 32) x += y;
      }
      int run = x - own;  // keys in higher bins
      if (run < k && k <= x) {
        for (int b = 7; b >= 0; --b) {
          const int c = hist[lane * 8 + b];
          if (run < k && k <= run + c) {
            bcast[0] = lane * 8 + b;
            bcast[1] = k - run;
            break;
          }
          run += c;
        }
      }
    }
    __syncthreads();
    prefix |= static_cast<uint64_t>(bcast[0]) << shift;
    mask |= uint64_t{255} << shift;
    k = bcast[1];
  }
  return prefix;
}

// dot_f64.h's definition: eight lane sums over d = l (mod 8), combined in a fixed tree.
__device__ __forceinline__ double dot_fixed(const float* a, const float* b, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  int c = 0;
  for (; c + 8 <= n; c += 8) {
    s0 = fma(static_cast<double>(a[c + 0]), static_cast<double>(b[c + 0]), s0);
    s1 = fma(static_cast<double>(a[c + 1]), static_cast<double>(b[c + 1]), s1);
    s2 = fma(static_cast<double>(a[c + 2]), static_cast<double>(b[c + 2]), s2);
    s3 = fma(static_cast<double>(a[c + 3]), static_cast<double>(b[c + 3]), s3);
    s4 = fma(static_cast<double>(a[c + 4]), static_cast<double>(b[c + 4]), s4);
    s5 = fma(static_cast<double>(a[c + 5]), static_cast<double>(b[c + 5]), s5);
    s6 = fma(static_cast<double>(a[c + 6]), static_cast<double>(b[c + 6]), s6);
    s7 = fma(static_cast<double>(a[c + 7]), static_cast<double>(b[c + 7]), s7);
  }
  if (c + 0 < n) s0 = fma(static_cast<double>(a[c + 0]), static_cast<double>(b[c + 0]), s0);
  if (c + 1 < n) s1 = fma(static_cast<double>(a[c + 1]), static_cast<double>(b[c + 1]), s1);
  if (c + 2 < n) s2 = fma(static_cast<double>(a[c + 2]), static_cast<double>(b[c + 2]), s2);
  if (c + 3 < n) s3 = fma(static_cast<double>(a[c + 3]), static_cast<double>(b[c + 3]), s3);
  if (c + 4 < n) s4 = fma(static_cast<double>(a[c + 4]), static_cast<double>(b[c + 4]), s4);
  if (c + 5 < n) s5 = fma(static_cast<double>(a[c + 5]), static_cast<double>(b[c + 5]), s5);
  if (c + 6 < n) s6 = fma(static_cast<double>(a[c + 6]), static_cast<double>(b[c + 6]), s6);
  return ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7));
}

// Folds a chunk's per-key maxima into their branches (a branch's keys may straddle chunks).
__device__ __forceinline__ void fold_chunk(int p0, int np, int kpr, const int* list, double* br_score,
                                           const double* key_score) {
  const int first = p0 / kpr, last = (p0 + np - 1) / kpr;
  for (int x = first + static_cast<int>(threadIdx.x); x <= last; x += kThreads) {
    const int i = list[x];
    double best = br_score[i];
    const int pb = max(x * kpr, p0), pe = min((x + 1) * kpr, p0 + np);
    for (int p = pb; p < pe; ++p) best = nan_max(best, key_score[p - p0]);
    br_score[i] = best;
  }
}

template <class T, bool kExact>
__global__ void __launch_bounds__(kThreads, 3) hip_mask_kernel(const MaskArgs a) {
  extern __shared__ __align__(16) uint8_t smem[];
  double* br_score = reinterpret_cast<double*>(smem + a.sm.br_score);
  double* nd_score = reinterpret_cast<double*>(smem + a.sm.nd_score);
  double* key_score = reinterpret_cast<double*>(smem + a.sm.key_score);
  int* br_begin = reinterpret_cast<int*>(smem + a.sm.br_begin);
  int* br_end = reinterpret_cast<int*>(smem + a.sm.br_end);
  int* br_repr = reinterpret_cast<int*>(smem + a.sm.br_repr);
  int* nd_begin = reinterpret_cast<int*>(smem + a.sm.nd_begin);
  int* nd_end = reinterpret_cast<int*>(smem + a.sm.nd_end);
  int* nd_repr = reinterpret_cast<int*>(smem + a.sm.nd_repr);
  int* scan = reinterpret_cast<int*>(smem + a.sm.scan);
  int* flag = reinterpret_cast<int*>(smem + a.sm.flag);
  int* list = reinterpret_cast<int*>(smem + a.sm.list);
  int* red = reinterpret_cast<int*>(smem + a.sm.red);
  int parity = 0;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Grid order (kernels/cuda/search_order.h): a KV group's heads fastest, longest searches first.
  const SearchCoords sc = search_coords(blockIdx.x, a.hq, a.hkv, a.qbs);
  const int64_t b = sc.b, h = sc.h, qb = sc.qb, item = sc.item;
  const int kb = static_cast<int>(a.kb);
  int32_t* out = a.blocks + item * a.kb;
  const DevRange sr = dev_search_range(a.hip, a.positions, a.tq, a.tk, qb);
  const int64_t n = sr.hi - sr.lo;
  const bool traced = a.trace && b == a.trace_batch && qb == a.trace_qb && (a.trace_every_head || h == a.trace_head);
  uint8_t* trace = traced && a.trace_every_head ? a.trace + static_cast<size_t>(h) * a.trace_stride : a.trace;
  int32_t* trace_ints = reinterpret_cast<int32_t*>(trace);
  TraceEntry* trace_entries = traced ? reinterpret_cast<TraceEntry*>(trace + trace_entries_offset(a.kb)) : nullptr;

  if (n <= a.kb) {  // the whole range fits in the budget
    for (int j = tid; j < kb; j += kThreads) out[j] = j < n ? static_cast<int32_t>(sr.lo + j) : -1;
    if (tid == 0) {
      a.counts[item] = static_cast<int32_t>(n);
      if (a.iterations) a.iterations[item] = 0;
      if (a.branches) a.branches[item] = 0;
      if (traced) trace_ints[0] = 0;
    }
    return;
  }

  // Sampled query rows, kept in shared memory for the whole search.
  const int64_t g = h / (a.hq / a.hkv);
  const int d = static_cast<int>(a.d);
  const int R = static_cast<int>((sr.row_end - sr.row_begin + a.hip.b_sq - 1) / a.hip.b_sq);
  const T* qbase = static_cast<const T*>(a.q) + b * a.qs.b + h * a.qs.h;
  const T* kbase = static_cast<const T*>(a.k) + b * a.ks.b + g * a.ks.h;
  if constexpr (kExact) {
    float* sq = reinterpret_cast<float*>(smem + a.sm.sq);
    for (int e = tid; e < R * d; e += kThreads) {
      const int r = e / d, c = e % d;
      sq[r * a.q_ld + c] = to_f32(qbase[(sr.row_begin + r * a.hip.b_sq) * a.qs.t + c]);
    }
  } else {
    T* sq = reinterpret_cast<T*>(smem + a.sm.sq);
    for (int e = tid; e < a.r16 * a.d16; e += kThreads) {
      const int r = e / a.d16, c = e % a.d16;
      sq[r * a.q_ld + c] = (r < R && c < d) ? qbase[(sr.row_begin + r * a.hip.b_sq) * a.qs.t + c] : from_f32<T>(0.f);
    }
  }

  // Kb initial nodes of (nearly) equal size.
  int largest_local = 0;
  for (int j = tid; j < kb; j += kThreads) {
    nd_begin[j] = static_cast<int>(sr.lo + j * n / a.kb);
    nd_end[j] = static_cast<int>(sr.lo + (j + 1) * n / a.kb);
    nd_repr[j] = -1;
    nd_score[j] = 0;
    largest_local = max(largest_local, nd_end[j] - nd_begin[j]);
    if (traced) {
      trace_ints[1 + kMaxIter + j] = nd_begin[j];
      trace_ints[1 + kMaxIter + kb + j] = nd_end[j];
    }
  }
  int largest = block_max(largest_local, red, parity);

  const int kpr = static_cast<int>(a.hip.b_k / a.hip.b_sk);  // sampled keys per representative
  const double rho = a.hip.rho;
  int iter = 0;
  int64_t branch_total = 0;
  while (largest > 1) {
    // 1. split: offsets of each node's branches.
    for (int j = tid; j < kb; j += kThreads) scan[j] = (nd_end[j] - nd_begin[j] >= 2) ? 2 : 1;
    __syncthreads();
    const int nb = block_scan(scan, kb, red, parity);
    for (int j = tid; j < kb; j += kThreads) {
      const int o = scan[j], nb0 = nd_begin[j], ne = nd_end[j];
      if (ne - nb0 >= 2) {
        const int m = nb0 + (ne - nb0) / 2;
        br_begin[o] = nb0, br_end[o] = m, br_repr[o] = nd_repr[j], br_score[o] = nd_score[j];
        br_begin[o + 1] = m, br_end[o + 1] = ne, br_repr[o + 1] = nd_repr[j], br_score[o + 1] = nd_score[j];
      } else {
        br_begin[o] = nb0, br_end[o] = ne, br_repr[o] = nd_repr[j], br_score[o] = nd_score[j];
      }
    }
    __syncthreads();
    // 2. representatives; those not inherited need scores.
    for (int i = tid; i < nb; i += kThreads) {
      const int len = br_end[i] - br_begin[i];
      const int off = min(len - 1, static_cast<int>(floor(rho * static_cast<double>(len))));
      const int r = br_begin[i] + off;
      const int need = r != br_repr[i];
      br_repr[i] = r;
      if (need) br_score[i] = -INFINITY;
      flag[i] = need;
      scan[i] = need;
    }
    __syncthreads();
    const int ns = block_scan(scan, nb, red, parity);
    for (int i = tid; i < nb; i += kThreads)
      if (flag[i]) list[scan[i]] = i;
    __syncthreads();

    const int pairs = ns * kpr;  // (branch, sampled key) pairs to score
    if constexpr (kExact) {
      for (int p0 = 0; p0 < pairs; p0 += kChunkExact) {
        const int np = min(kChunkExact, pairs - p0);
        float* sk = reinterpret_cast<float*>(smem + a.sm.sk);
        for (int e = tid; e < np * d; e += kThreads) {
          const int pp = e / d, c = e % d, p = p0 + pp;
          const int64_t key = int64_t{br_repr[list[p / kpr]]} * a.hip.b_k + int64_t{p % kpr} * a.hip.b_sk;
          sk[pp * a.k_ld + c] = to_f32(kbase[key * a.ks.t + c]);
        }
        __syncthreads();
        // Max over the sampled rows of each key's float64 dot products; 4 threads per key.
        const float* sq = reinterpret_cast<const float*>(smem + a.sm.sq);
        const int pp = tid >> 2, sub = tid & 3;
        double best = -INFINITY;
        if (pp < np) {
          for (int r = sub; r < R; r += 4) best = nan_max(best, dot_fixed(sq + r * a.q_ld, sk + pp * a.k_ld, d));
        }
        best = nan_max(best, __shfl_xor_sync(0xffffffffu, best, 1));
        best = nan_max(best, __shfl_xor_sync(0xffffffffu, best, 2));
        if (sub == 0 && pp < np) key_score[pp] = best;
        __syncthreads();
        fold_chunk(p0, np, kpr, list, br_score, key_score);
        __syncthreads();
      }
    } else {
      // Tensor-core path: chunks of 64 (decode: 256) sampled keys, gathered with cp.async into
      // kStages buffers so that the next kStages - 1 chunks are in flight while one is multiplied.
      T* skb = reinterpret_cast<T*>(smem + a.sm.sk);
      const int kChunk = a.chunk;
      const int chunks = (pairs + kChunk - 1) / kChunk;
      const int vecs = a.d16 / 8;  // 16-byte pieces per key row
      auto issue = [&](int ci) {
        T* dst = skb + (ci % kStages) * kChunk * a.k_ld;
        const int p0 = ci * kChunk, np = min(kChunk, pairs - p0);
        for (int e = tid; e < kChunk * vecs; e += kThreads) {
          const int pp = e / vecs, c = (e - pp * vecs) * 8;
          int64_t key = 0;
          if (pp < np) {
            const int p = p0 + pp, x = p / kpr;
            key = int64_t{br_repr[list[x]]} * a.hip.b_k + int64_t{p - x * kpr} * a.hip.b_sk;
          }
          if (a.vec_ok) {
            const bool valid = pp < np && c < d;
            cp_async16(dst + pp * a.k_ld + c, valid ? kbase + key * a.ks.t + c : kbase, valid);
          } else {
            for (int i = 0; i < 8; ++i)
              dst[pp * a.k_ld + c + i] = (pp < np && c + i < d) ? kbase[key * a.ks.t + c + i] : from_f32<T>(0.f);
          }
        }
        cp_async_commit();
      };
      // One commit group per chunk index (empty past the end), so that waiting for all but the
      // newest kStages - 1 groups always means "chunk ci has landed".
      for (int ci = 0; ci < kStages - 1; ++ci) {
        if (ci < chunks) issue(ci);
        else cp_async_commit();
      }
      for (int ci = 0; ci < chunks; ++ci) {
        if (ci + kStages - 1 < chunks) issue(ci + kStages - 1);
        else cp_async_commit();
        cp_async_wait<kStages - 1>();
        __syncthreads();
        const int p0 = ci * kChunk, np = min(kChunk, pairs - p0);
        const T* sq = reinterpret_cast<const T*>(smem + a.sm.sq);
        const T* sk = skb + (ci % kStages) * kChunk * a.k_ld;
        const int gq = lane >> 2, cq = lane & 3;
        for (int nt = warp; nt < kChunk / 8; nt += kWarps) {
          if (nt * 8 >= np) break;
          float m0 = -INFINITY, m1 = -INFINITY;
          for (int mt = 0; mt < a.r16 / 16; ++mt) {
            if (mt * 16 >= R) break;
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            for (int ks = 0; ks < a.d16 / 16; ++ks) {
              const T* qa = sq + (mt * 16 + gq) * a.q_ld + ks * 16 + cq * 2;
              uint32_t af[4];
              af[0] = *reinterpret_cast<const uint32_t*>(qa);
              af[1] = *reinterpret_cast<const uint32_t*>(qa + 8 * a.q_ld);
              af[2] = *reinterpret_cast<const uint32_t*>(qa + 8);
              af[3] = *reinterpret_cast<const uint32_t*>(qa + 8 * a.q_ld + 8);
              const T* kbp = sk + (nt * 8 + gq) * a.k_ld + ks * 16 + cq * 2;
              uint32_t bf[2];
              bf[0] = *reinterpret_cast<const uint32_t*>(kbp);
              bf[1] = *reinterpret_cast<const uint32_t*>(kbp + 8);
              mma16816<T>(acc, af, bf);
            }
            const bool v0 = mt * 16 + gq < R, v1 = mt * 16 + gq + 8 < R;
            if (v0) m0 = nan_max(m0, acc[0]), m1 = nan_max(m1, acc[1]);
            if (v1) m0 = nan_max(m0, acc[2]), m1 = nan_max(m1, acc[3]);
          }
#pragma unroll
          for (int o = 4; o < 32; o <<= 1) {
            m0 = nan_max(m0, __shfl_xor_sync(0xffffffffu, m0, o));
            m1 = nan_max(m1, __shfl_xor_sync(0xffffffffu, m1, o));
          }
          if (gq == 0) {
            const int k0 = p0 + nt * 8 + cq * 2;  // pair index of this lane's first key
            if (kpr <= 2) {
              // A branch's keys never straddle a lane's pair (chunks and pairs start at multiples
              // of 2): fold straight into the branch score, no second pass.
              if (kpr == 2) {
                if (k0 < p0 + np) br_score[list[k0 >> 1]] = nan_max(nan_max(-INFINITY, m0), m1);
              } else {
                if (k0 < p0 + np) br_score[list[k0]] = nan_max(-INFINITY, m0);
                if (k0 + 1 < p0 + np) br_score[list[k0 + 1]] = nan_max(-INFINITY, m1);
              }
            } else {
              key_score[nt * 8 + cq * 2] = m0;
              key_score[nt * 8 + cq * 2 + 1] = m1;
            }
          }
        }
        __syncthreads();
        if (kpr > 2) {
          fold_chunk(p0, np, kpr, list, br_score, key_score);
          __syncthreads();
        }
      }
    }

    // 3. selection of the Kb best: threshold key T = the Kb-th largest, found bit by bit.
    uint64_t keys[kMaxPer];
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int i = tid + j * kThreads;
      keys[j] = i < nb ? score_key<kExact>(br_score[i]) : 0;  // 0 is below every real key
    }
    int* hist = reinterpret_cast<int*>(smem + a.sm.hist);
    const uint64_t thr = kth_largest_key(keys, nb, kb, kExact ? 0 : 32, hist);
    int c_gt = 0;
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) c_gt += (tid + j * kThreads < nb && keys[j] > thr);
    const int need = kb - block_sum(c_gt, red, parity);
    // Ties at the threshold: the first `need` of them in branch (= begin) order are kept.
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int i = tid + j * kThreads;
      if (i < nb) scan[i] = keys[j] == thr;
    }
    __syncthreads();
    block_scan(scan, nb, red, parity);
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int i = tid + j * kThreads;
      if (i < nb) flag[i] = keys[j] > thr || (keys[j] == thr && scan[i] < need);
    }
    __syncthreads();
    block_scan(flag, nb, red, parity);
    // 4. kept branches become the next nodes, in ascending begin.
    largest_local = 0;
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int i = tid + j * kThreads;
      if (i >= nb) continue;
      const bool kept = keys[j] > thr || (keys[j] == thr && scan[i] < need);
      if (kept) {
        const int o = flag[i];
        nd_begin[o] = br_begin[i], nd_end[o] = br_end[i], nd_repr[o] = br_repr[i], nd_score[o] = br_score[i];
        largest_local = max(largest_local, br_end[i] - br_begin[i]);
      }
      if (traced && iter < kMaxIter) {
        trace_entries[static_cast<size_t>(iter) * 2 * a.kb + i] =
            TraceEntry{br_begin[i], br_end[i], br_repr[i], kept ? 1 : 0, br_score[i]};
      }
    }
    if (traced && tid == 0 && iter < kMaxIter) trace_ints[1 + iter] = nb;
    largest = block_max(largest_local, red, parity);  // its barrier also publishes the new nodes
    ++iter;
    branch_total += nb;
  }

  for (int j = tid; j < kb; j += kThreads) out[j] = nd_begin[j];
  if (tid == 0) {
    a.counts[item] = kb;
    if (a.iterations) a.iterations[item] = iter;
    if (a.branches) a.branches[item] = branch_total;
    if (traced) trace_ints[0] = iter;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

size_t mask_trace_bytes(int64_t kb) {
  return trace_entries_offset(kb) + sizeof(TraceEntry) * static_cast<size_t>(kMaxIter) * 2 * static_cast<size_t>(kb);
}

size_t mask_trace_header_bytes(int64_t kb) { return trace_entries_offset(kb); }

size_t mask_trace_used_bytes(int64_t kb, int iterations) {
  const int iters = std::min(std::max(iterations, 0), kMaxIter);
  return trace_entries_offset(kb) + sizeof(TraceEntry) * static_cast<size_t>(iters) * 2 * static_cast<size_t>(kb);
}

int mask_trace_iterations(const uint8_t* header) { return reinterpret_cast<const int32_t*>(header)[0]; }

hip::MaskTrace decode_mask_trace(const uint8_t* host, size_t size, int64_t kb, int64_t head, int64_t query_block,
                                 int64_t row_begin, int64_t row_end, int64_t p0, int64_t lo, int64_t hi,
                                 int64_t dense_from) {
  if (size < mask_trace_header_bytes(kb) || size < mask_trace_used_bytes(kb, mask_trace_iterations(host)))
    throw_arg("trace buffer smaller than the trace it holds (mask_trace_used_bytes)");
  hip::MaskTrace t;
  t.head = head, t.query_block = query_block, t.row_begin = row_begin, t.row_end = row_end, t.p0 = p0;
  t.lo = lo, t.hi = hi, t.dense_from = dense_from;
  const int32_t* ints = reinterpret_cast<const int32_t*>(host);
  const TraceEntry* entries = reinterpret_cast<const TraceEntry*>(host + trace_entries_offset(kb));
  const int64_t n = hi - lo;
  if (n <= kb) {
    for (int64_t j = 0; j < n; ++j) t.blocks.push_back(static_cast<int32_t>(lo + j));
    return t;
  }
  t.initial_begin.assign(ints + 1 + kMaxIter, ints + 1 + kMaxIter + kb);
  t.initial_end.assign(ints + 1 + kMaxIter + kb, ints + 1 + kMaxIter + 2 * kb);
  const int iters = std::min(ints[0], kMaxIter);
  for (int it = 0; it < iters; ++it) {
    hip::TraceIteration ti;
    const int nb = ints[1 + it];
    for (int i = 0; i < nb; ++i) {
      const TraceEntry& e = entries[static_cast<size_t>(it) * 2 * kb + i];
      ti.branches.push_back(hip::TraceBranch{e.begin, e.end, e.repr, e.score, e.kept != 0});
    }
    t.iterations.push_back(std::move(ti));
  }
  if (!t.iterations.empty()) {
    for (const auto& br : t.iterations.back().branches)
      if (br.kept) t.blocks.push_back(br.begin);
  } else {
    t.blocks = t.initial_begin;
  }
  return t;
}

namespace {
// CTAs per search when the few-search path (mask_cluster_kernel.cu) serves l, else 0.
int few_search_ctas(const MaskLaunch& l) {
  if (l.ctas_per_search < 0 || !cluster_mask_eligible(l)) return 0;
  const hip::HipParams& p = l.hip;
  const int64_t items = l.batch * l.hq * ((l.tq + p.b_q - 1) / p.b_q);
  return l.ctas_per_search > 0 ? l.ctas_per_search : l.warps_per_search > 0 ? 0 : cluster_mask_ctas_per_search(items);
}
}  // namespace

bool mask_in_decode_graph_supported(const MaskLaunch& l) {
  return l.batch == 1 && l.tq == 1 && !l.positions && !l.traced() && few_search_ctas(l) > 0;
}

void launch_estimate_masks(const MaskLaunch& l) {
  const hip::HipParams& p = l.hip;
  check_hip_params(p);
  const bool in_graph = l.device_position || l.decode_rows || l.counts_by_extra || l.after_prior;
  if (!l.q || !l.k || (!l.decode_rows && (!l.blocks || !l.counts)))
    throw_arg("mask estimation needs Q, K, and blocks and counts pointers (or decode rows)");
  if (in_graph) {
    if (!mask_in_decode_graph_supported(l))
      throw_arg("a device position, decode rows or a dependent launch need the few-search mask kernel: bf16/f16, d 64 or "
                "128, one query of one sequence without positions or traces, Kb <= 256");
    if (!l.decode_rows != !l.counts_by_extra) throw_arg("decode rows need both rows and counts_by_extra");
    if (l.tail_room < 0 || hip::hip_kb(p) + l.tail_room > (int64_t{1} << 30))
      throw_arg("decode rows: tail_room " + std::to_string(l.tail_room) + " outside [0, 2^30 - Kb]");
  }
  if (l.batch < 1 || l.hq < 1 || l.hkv < 1 || l.tq < 1 || l.tk < 1 || l.d < 1)
    throw_arg("mask estimation needs batch, heads, queries, keys and d >= 1");
  if (l.hq % l.hkv != 0) throw_arg("query heads must be a multiple of KV heads");
  if (l.tk >= (int64_t{1} << 31)) throw_arg("tk must be below 2^31");
  if (!l.positions && l.tq > l.tk) throw_arg("tq > tk needs explicit positions");
  const int64_t kb = hip::hip_kb(p);
  if (kb > kMaxKb) throw_arg("k / b_k = " + std::to_string(kb) + " exceeds the kernel's limit of " + std::to_string(kMaxKb));
  if (l.d > 256) throw_arg("head dimension " + std::to_string(l.d) + " exceeds 256");
  if (l.traced() && !l.trace_buffer) throw_arg("a trace request needs trace_buffer (mask_trace_bytes)");

  if (const int ctas = few_search_ctas(l); ctas > 0) {  // v16: few searches (decode), a CTA or cluster each
    estimate_masks_cluster(l, ctas);
    return;
  }
  if (warp_mask_eligible(l)) {  // v8: the common tensor-core shapes, no CTA barriers (mask_warp_kernel.cu)
    estimate_masks_warp(l, l.warps_per_search);
    return;
  }

  MaskArgs a{};
  a.q = l.q, a.k = l.k, a.qs = l.q_stride, a.ks = l.k_stride, a.positions = l.positions;
  a.hq = l.hq, a.hkv = l.hkv, a.tq = l.tq, a.tk = l.tk, a.d = l.d;
  a.qbs = (l.tq + p.b_q - 1) / p.b_q, a.kb = kb, a.hip = p;
  a.blocks = l.blocks, a.counts = l.counts, a.iterations = l.iterations, a.branches = l.branches;
  a.trace_batch = l.trace_batch, a.trace_head = l.trace_head, a.trace_qb = l.trace_query_block;
  a.trace_every_head = l.trace_every_head, a.trace_stride = mask_trace_bytes(kb);
  a.trace = l.traced() ? static_cast<uint8_t*>(l.trace_buffer) : nullptr;
  a.r_max = static_cast<int>((p.b_q + p.b_sq - 1) / p.b_sq);
  a.r16 = (a.r_max + 15) / 16 * 16;
  a.d16 = static_cast<int>((l.d + 15) / 16 * 16);
  const bool exact = l.dtype == ElementType::kF32;
  // Row padding: +1 float (exact: keys and rows read by different threads at the same column hit
  // different banks); +8 halves (16 bytes) for the fragment loads of the tensor-core path.
  a.q_ld = exact ? static_cast<int>(l.d) + 1 : a.d16 + 8;
  a.k_ld = a.q_ld;
  a.vec_ok = !exact && l.d % 8 == 0 && aligned16(l.k) && l.k_stride.t % 8 == 0 && l.k_stride.h % 8 == 0 &&
             l.k_stride.b % 8 == 0;
  const int64_t ctas_total = l.batch * l.hq * ((l.tq + p.b_q - 1) / p.b_q);
  a.chunk = ctas_total < 2 * device_sm_count() ? kChunkFastFew : kChunkFast;
  a.sm = layout(kb, exact, a.r_max, a.r16, a.d16, a.q_ld, a.k_ld, a.chunk);
  // The few-CTA chunk holds 4x the keys in shared memory: with head_dim 256 (Gemma 2 / 3) at
  // Kb 256 it passes an H200's 227 KB, where the regular chunk fits (the same kernel, fewer bytes
  // in flight per CTA).
  if (a.chunk != kChunkFast && a.sm.total > static_cast<size_t>(device_smem_optin())) {
    a.chunk = kChunkFast;
    a.sm = layout(kb, exact, a.r_max, a.r16, a.d16, a.q_ld, a.k_ld, a.chunk);
  }
  const int64_t ctas = l.batch * l.hq * a.qbs;
  if (ctas >= (int64_t{1} << 31)) throw_arg("too many (batch, head, query block) items for one launch");
  if (l.traced()) {
    if ((!l.trace_every_head && l.trace_head >= l.hq) || l.trace_query_block < 0 || l.trace_query_block >= a.qbs || l.trace_batch < 0 ||
        l.trace_batch >= l.batch)
      throw_arg("trace request outside the heads x query blocks");
  }
  const dim3 grid(static_cast<unsigned>(ctas));
  cudaStream_t s = as_stream(l.stream);
  switch (l.dtype) {
    case ElementType::kF32:
      set_smem(reinterpret_cast<const void*>(hip_mask_kernel<float, true>), a.sm.total, "mask estimation (f32)");
      hip_mask_kernel<float, true><<<grid, kThreads, a.sm.total, s>>>(a);
      break;
    case ElementType::kBF16:
      set_smem(reinterpret_cast<const void*>(hip_mask_kernel<__nv_bfloat16, false>), a.sm.total, "mask estimation (bf16)");
      hip_mask_kernel<__nv_bfloat16, false><<<grid, kThreads, a.sm.total, s>>>(a);
      break;
    case ElementType::kF16:
      set_smem(reinterpret_cast<const void*>(hip_mask_kernel<__half, false>), a.sm.total, "mask estimation (f16)");
      hip_mask_kernel<__half, false><<<grid, kThreads, a.sm.total, s>>>(a);
      break;
  }
  HIP_CUDA_CHECK_LAUNCH("hip_mask_kernel");
}

}  // namespace hipstudio::gpu
