// Block-sparse HiP attention on the GPU (kernels/sparse_attention_reference.h is the CPU
// reference): every query attends sink + its query block's selected key blocks + the dense tail,
// keys beyond its visible end masked.
//
// Current version (v7, kernels/BENCHMARKS.md): tensor cores, bf16/f16, head dim padded to 64 or
// 128; one CTA per (batch, head, query block, tile of <= 64 rows, split), one warp per 16 query
// rows (CTAs of <= 16 rows, i.e. decode, get 4 warps, the extra ones only copying). The CTA walks
// its key list (sink, then the selected blocks, then the dense tail) in tiles of 64 keys: K and V
// rows gathered by 16-byte cp.async into two shared-memory stages (the next tile in flight while
// this one is computed), S = Q K^T with mma.m16n8k16 from Q fragments held in registers, online
// softmax in float32 (exp2 with the scale folded in), O += P V with P re-packed from the S
// accumulators and V's fragments read transposed by ldmatrix. Grid order: split, head within its
// KV group, row tile, query block (longest lists first), group. Decode (few rows, long KV) splits
// the key list over CTAs (`num_splits`, chosen to fill the GPU); the last CTA of a row tile to
// finish merges the partial (max, sum, O) rows (v14: the merge was a second, dependent kernel).
// The float32 path (and any shape the tensor-core path does not take) is a SIMT kernel: one warp
// per query row, float32 dot products and online softmax.
#include <algorithm>
#include <cmath>

#include "kernels/cuda/common.cuh"

namespace hipstudio::gpu {
namespace {

constexpr int kBK = 64;       // keys per tile: 8 n-tiles of S per warp, 4 k-steps of P V
constexpr int kRowsCta = 64;  // query rows per CTA at most (4 warps)
constexpr float kLog2e = 1.4426950408889634f;

struct AttnArgs {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  Strides qs, ks, vs, os;
  const int64_t* positions;
  int64_t hq, hkv, tq, tk, d, qbs, kb;
  hip::HipParams hip;
  const int32_t* blocks;
  const int32_t* counts;
  int splits, row_tiles, rows_cta;
  float* part_o;   // (splits, batch * hq * tq, d)
  float* part_ml;  // (splits, batch * hq * tq, 2): running max (log2 units) and sum
  unsigned* done;  // per row tile (blockIdx.x / splits): splits finished; zero between calls
  int64_t rows_total;
  float scale_log2;
};

// The CTA's key list: [0, sink_len) | cnt selected blocks of b_k keys | [dense_from, e_max].
struct KeyList {
  int64_t sink_len, blk_len, dense_from, total;
  const int32_t* blocks;
  int64_t b_k;
  __device__ int64_t key(int64_t j) const {
    if (j < sink_len) return j;
    j -= sink_len;
    if (j < blk_len) {
      const int32_t blk = blocks[j / b_k];
      return blk < 0 ? -1 : int64_t{blk} * b_k + j % b_k;
    }
    j -= blk_len;
    return j < total - sink_len - blk_len ? dense_from + j : -1;
  }
};

struct CtaCoords {
  int64_t b, h, qb, r0, r1, item;
  int split;
};

__device__ CtaCoords cta_coords(const AttnArgs& a) {
  CtaCoords c;
  int64_t idx = blockIdx.x;
  // Fastest first: split, head within its KV group, row tile, query block (longest lists first),
  // KV group, batch: resident CTAs gather from one group's K/V, which L2 can hold.
  const int64_t group = a.hq / a.hkv;
  c.split = static_cast<int>(idx % a.splits);
  idx /= a.splits;
  const int64_t hg = idx % group;
  idx /= group;
  const int64_t rt = idx % a.row_tiles;
  idx /= a.row_tiles;
  c.qb = a.qbs - 1 - idx % a.qbs;
  idx /= a.qbs;
  c.h = (idx % a.hkv) * group + hg;
  c.b = idx / a.hkv;
  c.item = (c.b * a.hq + c.h) * a.qbs + c.qb;
  const int64_t qb_begin = c.qb * a.hip.b_q;
  const int64_t qb_end = min(a.tq, qb_begin + a.hip.b_q);
  c.r0 = qb_begin + rt * kRowsCta;
  c.r1 = min(qb_end, c.r0 + kRowsCta);
  return c;
}

__device__ KeyList key_list(const AttnArgs& a, const CtaCoords& c, int64_t e_max) {
  const DevRange sr = dev_search_range(a.hip, a.positions, a.tq, a.tk, c.qb);
  KeyList kl;
  kl.sink_len = min(a.hip.sink, e_max + 1);
  const int64_t cnt = min(static_cast<int64_t>(a.counts[c.item]), a.kb);
  kl.blk_len = (cnt > 0 ? cnt : 0) * a.hip.b_k;
  kl.dense_from = sr.dense_from;
  kl.total = kl.sink_len + kl.blk_len + max(int64_t{0}, e_max - sr.dense_from + 1);
  kl.blocks = a.blocks + c.item * a.kb;
  kl.b_k = a.hip.b_k;
  return kl;
}

// Merges the splits' partial rows of the CTA's row tile: out = sum_s 2^(m_s - M) O_s /
// sum_s 2^(m_s - M) l_s, one warp per row, 4 columns per lane. Partials written by other CTAs
// are read with ld.global.cg (L2, not this SM's possibly stale L1). `w`: this warp's kMaxSplits
// floats of shared memory for the splits' weights.
constexpr int kMaxSplits = 256;
template <class T>
__device__ void merge_rows(const AttnArgs& a, const CtaCoords& c, float* w, int warp, int lane, int nwarps) {
  const int64_t base = (c.b * a.hq + c.h) * a.tq;
  const int d = static_cast<int>(a.d);
  T* obase = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h;
  for (int64_t row = c.r0 + warp; row < c.r1; row += nwarps) {
    const int64_t r = base + row;
    float mmax = -INFINITY;
    for (int s = lane; s < a.splits; s += 32) {
      const float2 ml = __ldcg(reinterpret_cast<const float2*>(a.part_ml + 2 * (s * a.rows_total + r)));
      w[s] = ml.x;
      mmax = fmaxf(mmax, ml.x);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mmax = fmaxf(mmax, __shfl_xor_sync(0xffffffffu, mmax, o));
    const float mu = mmax == -INFINITY ? 0.f : mmax;
    float lsum = 0.f;
    for (int s = lane; s < a.splits; s += 32) {
      const float m = w[s];
      const float ws = m == -INFINITY ? 0.f : exp2f(m - mu);
      lsum += ws * __ldcg(a.part_ml + 2 * (s * a.rows_total + r) + 1);
      w[s] = ws;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) lsum += __shfl_xor_sync(0xffffffffu, lsum, o);
    __syncwarp();
    const float inv_l = lsum > 0.f ? 1.f / lsum : 0.f;
    for (int col = lane * 4; col < d; col += 128) {
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
      for (int s = 0; s < a.splits; ++s) {
        const float ws = w[s];
        const float4 po = __ldcg(reinterpret_cast<const float4*>(a.part_o + (s * a.rows_total + r) * a.d + col));
        acc.x += ws * po.x, acc.y += ws * po.y, acc.z += ws * po.z, acc.w += ws * po.w;
      }
      T* orow = obase + row * a.os.t + col;
      *reinterpret_cast<uint32_t*>(orow) = pack2<T>(acc.x * inv_l, acc.y * inv_l);
      *reinterpret_cast<uint32_t*>(orow + 2) = pack2<T>(acc.z * inv_l, acc.w * inv_l);
    }
    __syncwarp();  // w is rewritten for the warp's next row
  }
}

template <int D>
constexpr size_t mma_smem_bytes() {  // two stages of K and V tiles (row-major, rows padded by 16 bytes) + key ids
  return 2 * (2 * static_cast<size_t>(kBK) * (D + 8) * 2) + 2 * kBK * sizeof(int64_t);
}

template <class T, int D>
__global__ void __launch_bounds__(128) sparse_attention_mma(const AttnArgs a) {
  constexpr int LD = D + 8;  // +16 bytes: the 8 rows of a fragment load (or ldmatrix) hit distinct banks
  constexpr int KS = D / 16;  // k-steps of Q K^T
  constexpr int NT = D / 8;   // n-tiles of O
  constexpr int kVecs = D / 8;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  T* sk_all = reinterpret_cast<T*>(smem_raw);               // [2][kBK][LD]
  T* sv_all = sk_all + 2 * kBK * LD;                         // [2][kBK][LD]
  int64_t* skey_all = reinterpret_cast<int64_t*>(sv_all + 2 * kBK * LD);  // [2][kBK]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nthreads = blockDim.x;
  const int gq = lane >> 2, cq = lane & 3;
  const CtaCoords c = cta_coords(a);
  if (c.r0 >= c.r1) return;
  const int64_t g = c.h / (a.hq / a.hkv);
  const int d = static_cast<int>(a.d);
  // Warps past the CTA's rows only help with the copies (decode: 1 row, 4 warps loading).
  const bool computes = warp * 16 < c.r1 - c.r0;

  // The first key ids need the item's count (which fixes this split's tiles) and then its block
  // list: start the list's lines toward L1 now, so that the second of those two dependent loads
  // does not go to DRAM as well (v14; a decode step is a chain of such round trips).
  if (tid * 32 < a.kb) prefetch_l1(a.blocks + c.item * a.kb + tid * 32);
  int64_t e_max = -1;
  for (int64_t r = c.r0; r < c.r1; ++r) e_max = max(e_max, dev_visible_end(a.positions, a.tq, a.tk, a.hip.causal, r));
  const KeyList kl = key_list(a, c, e_max);
  const int64_t tiles = (kl.total + kBK - 1) / kBK;
  const int64_t t_begin = tiles * c.split / a.splits, t_end = tiles * (c.split + 1) / a.splits;

  // This thread's two rows and their visible ends (-1: padding row, everything masked).
  const int64_t row0 = c.r0 + warp * 16 + gq, row1 = row0 + 8;
  const int64_t e0 = row0 < c.r1 ? dev_visible_end(a.positions, a.tq, a.tk, a.hip.causal, row0) : -1;
  const int64_t e1 = row1 < c.r1 ? dev_visible_end(a.positions, a.tq, a.tk, a.hip.causal, row1) : -1;

  // Q fragments, loaded once.
  const T* qbase = static_cast<const T*>(a.q) + c.b * a.qs.b + c.h * a.qs.h;
  uint32_t qf[KS][4];
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const int col = ks * 16 + cq * 2;
    auto ld = [&](int64_t row, int cc) -> uint32_t {
      if (row >= c.r1 || cc >= d) return 0u;
      return *reinterpret_cast<const uint32_t*>(qbase + row * a.qs.t + cc);
    };
    qf[ks][0] = ld(row0, col);
    qf[ks][1] = ld(row1, col);
    qf[ks][2] = ld(row0, col + 8);
    qf[ks][3] = ld(row1, col + 8);
  }

  float o[NT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

  const T* kbase = static_cast<const T*>(a.k) + c.b * a.ks.b + g * a.ks.h;
  const T* vbase = static_cast<const T*>(a.v) + c.b * a.vs.b + g * a.vs.h;
  // Stage s of tile `tile`: key ids, then K and V rows by cp.async (zero-filled where no key).
  auto key_ids = [&](int64_t tile, int stage) {
    for (int j = tid; j < kBK; j += nthreads) skey_all[stage * kBK + j] = kl.key(tile * kBK + j);
  };
  auto issue = [&](int stage) {
    const int64_t* skey = skey_all + stage * kBK;
    T* sk = sk_all + stage * kBK * LD;
    T* sv = sv_all + stage * kBK * LD;
    for (int e = tid; e < kBK * kVecs; e += nthreads) {
      const int j = e / kVecs, col = (e % kVecs) * 8;
      const int64_t key = skey[j];
      const bool valid = key >= 0 && col < d;
      cp_async16(sk + j * LD + col, valid ? kbase + key * a.ks.t + col : kbase, valid);
      cp_async16(sv + j * LD + col, valid ? vbase + key * a.vs.t + col : vbase, valid);
    }
    cp_async_commit();
  };
  if (t_begin < t_end) {
    key_ids(t_begin, 0);
    __syncthreads();
    issue(0);
  }
  for (int64_t tile = t_begin; tile < t_end; ++tile) {
    const int stage = static_cast<int>((tile - t_begin) & 1);
    if (tile + 1 < t_end) {  // next tile's copies fly while this one is computed
      key_ids(tile + 1, stage ^ 1);
      __syncthreads();
      issue(stage ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const T* sk = sk_all + stage * kBK * LD;
    const T* sv = sv_all + stage * kBK * LD;
    const int64_t* skey = skey_all + stage * kBK;
    if (computes) {
      // S = Q K^T for this warp's 16 rows x 64 keys.
      float s[kBK / 8][4];
#pragma unroll
      for (int nt = 0; nt < kBK / 8; ++nt) {
        s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
          const T* kp = sk + (nt * 8 + gq) * LD + ks * 16 + cq * 2;
          uint32_t bf[2];
          bf[0] = *reinterpret_cast<const uint32_t*>(kp);
          bf[1] = *reinterpret_cast<const uint32_t*>(kp + 8);
          mma16816<T>(s[nt], qf[ks], bf);
        }
      }
      // Mask, scale, online softmax.
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kBK / 8; ++nt) {
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          const int64_t key = skey[nt * 8 + cq * 2 + x];
          const bool ok0 = key >= 0 && key <= e0, ok1 = key >= 0 && key <= e1;
          s[nt][x] = ok0 ? s[nt][x] * a.scale_log2 : -INFINITY;
          s[nt][2 + x] = ok1 ? s[nt][2 + x] * a.scale_log2 : -INFINITY;
          mx0 = fmaxf(mx0, s[nt][x]);
          mx1 = fmaxf(mx1, s[nt][2 + x]);
        }
      }
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
      const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
      const float al0 = exp2f(m0 - mu0), al1 = exp2f(m1 - mu1);
      m0 = mn0, m1 = mn1;
      l0 *= al0, l1 *= al1;
#pragma unroll
      for (int t = 0; t < NT; ++t) o[t][0] *= al0, o[t][1] *= al0, o[t][2] *= al1, o[t][3] *= al1;
#pragma unroll
      for (int nt = 0; nt < kBK / 8; ++nt) {
        s[nt][0] = exp2f(s[nt][0] - mu0), s[nt][1] = exp2f(s[nt][1] - mu0);
        s[nt][2] = exp2f(s[nt][2] - mu1), s[nt][3] = exp2f(s[nt][3] - mu1);
        l0 += s[nt][0] + s[nt][1];
        l1 += s[nt][2] + s[nt][3];
      }
      // O += P V: P's accumulator layout is the A fragment layout of the next mma; V's B
      // fragments come transposed out of the row-major tile by ldmatrix (two n-tiles per call).
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        uint32_t pf[4];
        pf[0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
        pf[1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
        pf[2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        pf[3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
        const T* vrow = sv + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + (lane >> 4) * 8;
#pragma unroll
        for (int t = 0; t < NT; t += 2) {
          uint32_t r[4];
          ldmatrix_x4_trans(r, vrow + t * 8);
          mma16816<T>(o[t], pf, r);
          mma16816<T>(o[t + 1], pf, r + 2);
        }
      }
    }
    __syncthreads();  // the next iteration refills this stage
  }

  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  if (a.splits == 1) {
    T* obase = static_cast<T*>(a.out) + c.b * a.os.b + c.h * a.os.h;
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int col = t * 8 + cq * 2;
      if (col >= d) continue;
      if (row0 < c.r1)
        *reinterpret_cast<uint32_t*>(obase + row0 * a.os.t + col) = pack2<T>(o[t][0] * inv0, o[t][1] * inv0);
      if (row1 < c.r1)
        *reinterpret_cast<uint32_t*>(obase + row1 * a.os.t + col) = pack2<T>(o[t][2] * inv1, o[t][3] * inv1);
    }
  } else {
    const int64_t base = (c.b * a.hq + c.h) * a.tq;
    const int64_t split_off = static_cast<int64_t>(c.split) * a.rows_total;
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int64_t row = x ? row1 : row0;
      if (row >= c.r1) continue;
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
    // The last CTA of this row tile to finish merges all splits' partials: every thread fences
    // its own stores before the CTA counts itself done (threadFenceReduction pattern), the last
    // one resets the counter for the next call and fences again before reading the others' rows.
    __shared__ unsigned last;
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      unsigned* done = a.done + blockIdx.x / a.splits;
      const unsigned prev = atomicAdd(done, 1u);
      last = prev + 1 == static_cast<unsigned>(a.splits);
      if (last) *done = 0u;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    merge_rows<T>(a, c, reinterpret_cast<float*>(smem_raw) + warp * kMaxSplits, warp, lane, nthreads >> 5);
  }
}

// SIMT path: one warp per query row, lane-strided dims (d <= 512), float32 throughout.
template <class T>
__global__ void __launch_bounds__(128) sparse_attention_simt(const AttnArgs a) {
  constexpr int kMaxPerLane = 16;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const CtaCoords c = cta_coords(a);
  const int64_t g = c.h / (a.hq / a.hkv);
  const int d = static_cast<int>(a.d);
  const float scale = a.scale_log2;
  const T* kbase = static_cast<const T*>(a.k) + c.b * a.ks.b + g * a.ks.h;
  const T* vbase = static_cast<const T*>(a.v) + c.b * a.vs.b + g * a.vs.h;
  for (int64_t row = c.r0 + warp; row < c.r1; row += nwarps) {
    const int64_t e = dev_visible_end(a.positions, a.tq, a.tk, a.hip.causal, row);
    const KeyList kl = key_list(a, c, e);
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
      const float sc = dot * scale;
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
  if (l.dtype == DType::kF32 || l.d > 128 || l.d % 8 != 0) return false;
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
  if (l.d > 512) throw_arg("head dimension " + std::to_string(l.d) + " exceeds 512");
  if (l.tk >= (int64_t{1} << 31)) throw_arg("tk must be below 2^31");
}

int64_t base_ctas(const AttentionLaunch& l) {
  const int64_t qbs = (l.tq + l.hip.b_q - 1) / l.hip.b_q;
  const int64_t row_tiles = (std::min<int64_t>(l.hip.b_q, l.tq) + kRowsCta - 1) / kRowsCta;
  return l.batch * l.hq * qbs * row_tiles;
}

}  // namespace

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
  a.hq = l.hq, a.hkv = l.hkv, a.tq = l.tq, a.tk = l.tk, a.d = l.d;
  a.qbs = (l.tq + l.hip.b_q - 1) / l.hip.b_q, a.kb = hip::hip_kb(l.hip), a.hip = l.hip;
  a.blocks = l.blocks, a.counts = l.counts;
  a.rows_cta = static_cast<int>(std::min<int64_t>({l.hip.b_q, l.tq, kRowsCta}));
  a.row_tiles = static_cast<int>((std::min<int64_t>(l.hip.b_q, l.tq) + kRowsCta - 1) / kRowsCta);
  a.rows_total = l.batch * l.hq * l.tq;
  a.scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(l.d))) * kLog2e;
  const bool mma = mma_path(l);
  a.splits = attention_splits(l);
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
    // One warp per 16 rows; CTAs of <= 16 rows (decode) get 4 warps anyway, the extra ones copying.
    const int threads = a.rows_cta > 16 ? 32 * ((a.rows_cta + 15) / 16) : 128;
    const bool d64 = l.d <= 64;
    auto launch = [&](auto kernel, size_t smem) {
      set_smem(reinterpret_cast<const void*>(kernel), smem, "sparse attention");
      kernel<<<grid, threads, smem, s>>>(a);
    };
    if (l.dtype == DType::kBF16) {
      if (d64) launch(sparse_attention_mma<__nv_bfloat16, 64>, mma_smem_bytes<64>());
      else launch(sparse_attention_mma<__nv_bfloat16, 128>, mma_smem_bytes<128>());
    } else {
      if (d64) launch(sparse_attention_mma<__half, 64>, mma_smem_bytes<64>());
      else launch(sparse_attention_mma<__half, 128>, mma_smem_bytes<128>());
    }
    HIP_CUDA_CHECK_LAUNCH("sparse_attention_mma");
    return;
  }
  switch (l.dtype) {
    case DType::kF32: sparse_attention_simt<float><<<grid, 128, 0, s>>>(a); break;
    case DType::kBF16: sparse_attention_simt<__nv_bfloat16><<<grid, 128, 0, s>>>(a); break;
    case DType::kF16: sparse_attention_simt<__half><<<grid, 128, 0, s>>>(a); break;
  }
  HIP_CUDA_CHECK_LAUNCH("sparse_attention_simt");
}

}  // namespace hipstudio::gpu
