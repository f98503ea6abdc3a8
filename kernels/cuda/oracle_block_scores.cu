#include "kernels/cuda/oracle_block_scores.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"

namespace hipstudio::gpu {
namespace {

constexpr int kRowsTile = 128;  // sampled rows of a CTA: 8 warps of 32 rows x 32 keys (4 x 2)
constexpr int kKeysTile = 64;   // keys of one step of a CTA's loop
constexpr int kThreads = 256;
constexpr int kAccLd = kKeysTile + 4;  // floats: a multiple of 4 (wmma) that spreads banks

struct Dims {
  int64_t sampled;     // rows a query block samples: ceil(b_q / b_sq)
  int64_t ld;          // shared-memory row length of Q and K tiles, in elements (d + 8)
  int64_t split_keys;  // keys of one CTA's share of its rows' visible keys, a multiple of kKeysTile
};

// The float maximum as an integer atomic: floats with the sign bit clear order as signed ints, those
// with it set (-0.0 included) in reverse as unsigned ints (the -inf fill is the largest such pattern).
__device__ __forceinline__ void atomic_max_float(float* addr, float v) {
  if (__float_as_int(v) >= 0) atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
  else atomicMin(reinterpret_cast<unsigned*>(addr), __float_as_uint(v));
}

// One CTA: a tile of kRowsTile sampled rows of one head, held in shared memory, against one share of
// the keys its rows can see, kKeysTile keys a step with the next step's keys in flight (cp.async
// double buffer). Each step's scores go through shared memory: first the maximum over each query
// block's rows per key (written into the block's first row), then over each key block's keys, which
// meets the other CTAs' and steps' parts of the same entry in an atomic maximum.
template <class T>
__global__ void __launch_bounds__(kThreads, 2) oracle_block_scores_kernel(const OracleBlockScoresLaunch a, const Dims dims) {
  namespace wmma = nvcuda::wmma;
  extern __shared__ __align__(16) uint8_t smem[];
  const int64_t ld = dims.ld, S = dims.sampled, d = a.d;
  T* qs = reinterpret_cast<T*>(smem);            // [kRowsTile][ld]
  T* kbuf = qs + kRowsTile * ld;                  // [2][kKeysTile][ld]
  float* acc = reinterpret_cast<float*>(kbuf + 2 * kKeysTile * ld);  // [kRowsTile][kAccLd]

  const int64_t h = blockIdx.y;
  // Later row tiles see more keys (causal): they start first, so the short ones fill the tail.
  const int64_t v0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRowsTile;  // first sampled row (j S + t)
  const int64_t total = a.nq * S;
  if (v0 >= total) return;
  const int64_t j_first = v0 / S, j_last = min(a.nq - 1, (v0 + kRowsTile - 1) / S);
  const int64_t visible = min(a.keys, a.first_position + (j_last + 1) * a.b_q);
  const int64_t c_begin = static_cast<int64_t>(blockIdx.z) * dims.split_keys;
  const int64_t c_end = min(visible, c_begin + dims.split_keys);
  if (c_begin >= c_end) return;  // keys after every row of the tile: left at the fill
  const int tid = threadIdx.x;
  const T* qh = static_cast<const T*>(a.q) + h * a.q_head_stride;
  const T* kk = static_cast<const T*>(a.k);
  const int vecs = static_cast<int>(d / 8);

  // K: kKeysTile keys from c0 (zeros past `keys`) into buffer b.
  auto load_keys = [&](int64_t c0, int b) {
    T* ks = kbuf + b * kKeysTile * ld;
    for (int i = tid; i < kKeysTile * vecs; i += kThreads) {
      const int c = i / vecs, e = (i % vecs) * 8;
      const bool ok = c0 + c < a.keys;
      cp_async16(ks + c * ld + e, ok ? kk + (c0 + c) * a.k_row_stride + e : kk, ok);
    }
  };
  // Q: the tile's sampled rows (zeros past the prompt's rows), once.
  for (int i = tid; i < kRowsTile * vecs; i += kThreads) {
    const int r = i / vecs, e = (i % vecs) * 8;
    const int64_t v = v0 + r, j = v / S, t = v % S, row = j * a.b_q + t * a.b_sq;
    const bool ok = v < total && t * a.b_sq < a.b_q && row < a.rows;
    cp_async16(qs + r * ld + e, ok ? qh + row * a.q_row_stride + e : qh, ok);
  }
  load_keys(c_begin, 0);
  asm volatile("cp.async.commit_group;\n" ::: "memory");

  const int warp = tid / 32, wr = (warp / 2) * 32, wc = (warp % 2) * 32;
  const float neg_inf = __int_as_float(static_cast<int>(0xff800000u));
  const int segs = static_cast<int>(j_last - j_first + 1);
  int b = 0;
  for (int64_t c0 = c_begin; c0 < c_end; c0 += kKeysTile, b ^= 1) {
    if (c0 + kKeysTile < c_end) load_keys(c0 + kKeysTile, b ^ 1);
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 1;\n" ::: "memory");  // this step's keys (and Q) landed
    __syncthreads();

    // 8 warps as 4 (rows) x 2 (keys), each 32 x 32: 2 x 2 fragments of 16 x 16.
    const T* ks = kbuf + b * kKeysTile * ld;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[2][2];
#pragma unroll
    for (int x = 0; x < 2; ++x)
#pragma unroll
      for (int y = 0; y < 2; ++y) wmma::fill_fragment(c[x][y], 0.f);
    for (int k0 = 0; k0 < d; k0 += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[2];
#pragma unroll
      for (int x = 0; x < 2; ++x) wmma::load_matrix_sync(fa[x], qs + (wr + x * 16) * ld + k0, static_cast<unsigned>(ld));
#pragma unroll
      for (int y = 0; y < 2; ++y) wmma::load_matrix_sync(fb[y], ks + (wc + y * 16) * ld + k0, static_cast<unsigned>(ld));
#pragma unroll
      for (int x = 0; x < 2; ++x)
#pragma unroll
        for (int y = 0; y < 2; ++y) wmma::mma_sync(c[x][y], fa[x], fb[y], c[x][y]);
    }
#pragma unroll
    for (int x = 0; x < 2; ++x)
#pragma unroll
      for (int y = 0; y < 2; ++y)
        wmma::store_matrix_sync(acc + (wr + x * 16) * kAccLd + wc + y * 16, c[x][y], kAccLd, wmma::mem_row_major);
    __syncthreads();

    // Per (query block, key): the maximum over the block's valid sampled rows inside the tile, into
    // the block's first row of the tile (each (block, key) is one thread's: no other reads it).
    for (int i = tid; i < segs * kKeysTile; i += kThreads) {
      const int64_t j = j_first + i / kKeysTile;
      const int key = i % kKeysTile;
      const int64_t r_begin = max(v0, j * S) - v0, r_end = min(v0 + kRowsTile, (j + 1) * S) - v0;
      float m = neg_inf;
      for (int64_t r = r_begin; r < r_end; ++r) {
        const int64_t row = j * a.b_q + ((v0 + r) - j * S) * a.b_sq;
        if (row >= a.rows) break;  // rows ascend within the block
        m = fmaxf(m, acc[r * kAccLd + key]);
      }
      if (r_begin < r_end) acc[r_begin * kAccLd + key] = m;
    }
    __syncthreads();

    // Per (query block, key block): the maximum over the block's keys inside the step.
    const int64_t key_end_step = min(c0 + kKeysTile, a.keys);
    const int64_t kb_first = c0 / a.b_k, kb_last = min(a.key_blocks - 1, (key_end_step - 1) / a.b_k);
    const int kbs = static_cast<int>(kb_last - kb_first + 1);
    for (int i = tid; i < segs * kbs; i += kThreads) {
      const int64_t j = j_first + i / kbs, cb = kb_first + i % kbs;
      const int64_t r_begin = max(v0, j * S) - v0;
      const int64_t key_begin = max(c0, cb * a.b_k), key_end = min(key_end_step, (cb + 1) * a.b_k);
      float m = neg_inf;
      for (int64_t key = key_begin; key < key_end; ++key) m = fmaxf(m, acc[r_begin * kAccLd + (key - c0)]);
      if (m > neg_inf) atomic_max_float(a.out + (h * a.nq + j) * a.key_blocks + cb, m);
    }
    __syncthreads();  // the next step's scores and key loads reuse acc and this buffer
  }
}

// The same scores where every warp's 32 sampled rows lie in one query block (32 divides the rows a
// block samples) and d is kD (64 or 128): the warps hold their Q fragments in registers for the CTA's
// whole key loop (mma.m16n8k16 with K fragments by ldmatrix), and reduce each step's scores in
// registers: the maximum over the warp's valid rows per key by shuffles, then over each key block's
// keys, into the same atomic maximum. 8 warps as 4 (rows) x 2 (keys) of 32 x 32.
template <class T, int kD>
__global__ void __launch_bounds__(kThreads, 2) oracle_block_scores_mma_kernel(const OracleBlockScoresLaunch a, const Dims dims) {
  constexpr int kSteps = kD / 16, kLd = kD + 8;
  extern __shared__ __align__(16) uint8_t smem[];
  const int64_t S = dims.sampled;
  T* qs = reinterpret_cast<T*>(smem);                               // [kRowsTile][kLd]
  T* kbuf = qs + kRowsTile * kLd;                                    // [2][kKeysTile][kLd]
  float* colmax = reinterpret_cast<float*>(kbuf + 2 * kKeysTile * kLd);  // [8 warps][32]

  const int64_t h = blockIdx.y;
  const int64_t v0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRowsTile;
  const int64_t total = a.nq * S;
  if (v0 >= total) return;
  const int64_t j_last = min(a.nq - 1, (v0 + kRowsTile - 1) / S);
  const int64_t visible = min(a.keys, a.first_position + (j_last + 1) * a.b_q);
  const int64_t c_begin = static_cast<int64_t>(blockIdx.z) * dims.split_keys;
  const int64_t c_end = min(visible, c_begin + dims.split_keys);
  if (c_begin >= c_end) return;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, tig = lane % 4;
  const int wr = (warp / 2) * 32, wc = (warp % 2) * 32;
  const T* qh = static_cast<const T*>(a.q) + h * a.q_head_stride;
  const T* kk = static_cast<const T*>(a.k);
  constexpr int kVecs = kD / 8;

  auto load_keys = [&](int64_t c0, int b) {
    T* ks = kbuf + b * kKeysTile * kLd;
    for (int i = tid; i < kKeysTile * kVecs; i += kThreads) {
      const int c = i / kVecs, e = (i % kVecs) * 8;
      const bool ok = c0 + c < a.keys;
      cp_async16(ks + c * kLd + e, ok ? kk + (c0 + c) * a.k_row_stride + e : kk, ok);
    }
  };
  for (int i = tid; i < kRowsTile * kVecs; i += kThreads) {
    const int r = i / kVecs, e = (i % kVecs) * 8;
    const int64_t v = v0 + r, j = v / S, t = v % S, row = j * a.b_q + t * a.b_sq;
    const bool ok = v < total && row < a.rows;
    cp_async16(qs + r * kLd + e, ok ? qh + row * a.q_row_stride + e : qh, ok);
  }
  load_keys(c_begin, 0);
  cp_async_commit();

  // This thread's four rows of the warp (m-tile mt, half hh: row wr + 16 mt + 8 hh + g): whether each
  // is a sampled row of the prompt (padding rows score 0 and must not win a maximum).
  const int64_t wv = v0 + wr;  // the warp's first sampled row; all 32 are in query block wv / S
  bool row_ok[2][2];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int64_t v = wv + 16 * mt + 8 * hh + g, j = v / S, t = v % S;
      row_ok[mt][hh] = v < total && j * a.b_q + t * a.b_sq < a.rows;
    }
  const bool warp_rows = wv < total;
  const int64_t j = wv / S;

  uint32_t qa[2][kSteps][4];
  int b = 0;
  bool loaded_q = false;
  for (int64_t c0 = c_begin; c0 < c_end; c0 += kKeysTile, b ^= 1) {
    if (c0 + kKeysTile < c_end) load_keys(c0 + kKeysTile, b ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (!loaded_q) {  // the warp's Q fragments, once
      loaded_q = true;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int ks = 0; ks < kSteps; ++ks)
          ldmatrix_x4(qa[mt][ks], qs + (wr + mt * 16 + lane % 16) * kLd + ks * 16 + (lane / 16) * 8);
    }
    const T* kt = kbuf + b * kKeysTile * kLd;
    float c[2][4][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) c[mt][nt][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        uint32_t kb[4];  // keys wc + 16 np + 0..7: kb[0..1]; + 8..15: kb[2..3]
        ldmatrix_x4(kb, kt + (wc + np * 16 + lane % 8 + (lane / 16) * 8) * kLd + ks * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma16816<T>(c[mt][2 * np], qa[mt][ks], kb);
          mma16816<T>(c[mt][2 * np + 1], qa[mt][ks], kb + 2);
        }
      }
    }
    // Per key: the maximum over this thread's valid rows, then over the lanes of the same columns.
    const float neg_inf = __int_as_float(static_cast<int>(0xff800000u));
    float m[4][2];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float x = neg_inf;
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
            if (row_ok[mt][hh]) x = fmaxf(x, c[mt][nt][2 * hh + e]);
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 4));
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 8));
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 16));
        m[nt][e] = x;
      }
    float* cm = colmax + warp * 32;
    if (g == 0) {
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) cm[nt * 8 + tig * 2 + e] = m[nt][e];
    }
    __syncwarp();
    // Per key block of the warp's 32 keys (keys below `keys` only): the maximum, into the entry.
    const int64_t w0 = c0 + wc, w1 = min(w0 + 32, a.keys);
    if (warp_rows && w0 < w1) {
      const int64_t kb_first = w0 / a.b_k, kb_last = min(a.key_blocks - 1, (w1 - 1) / a.b_k);
      for (int64_t cb = kb_first + lane; cb <= kb_last; cb += 32) {
        const int64_t k_begin = max(w0, cb * a.b_k), k_end = min(w1, (cb + 1) * a.b_k);
        float x = neg_inf;
        for (int64_t key = k_begin; key < k_end; ++key) x = fmaxf(x, cm[key - w0]);
        if (x > neg_inf) atomic_max_float(a.out + (h * a.nq + j) * a.key_blocks + cb, x);
      }
    }
    __syncthreads();  // the next step's key loads reuse this buffer
  }
}

template <int kD>
size_t mma_smem_bytes() {
  return static_cast<size_t>(kRowsTile + 2 * kKeysTile) * static_cast<size_t>(kD + 8) * 2 + 8 * 32 * sizeof(float);
}

size_t smem_bytes(int64_t ld) {
  return static_cast<size_t>(kRowsTile + 2 * kKeysTile) * static_cast<size_t>(ld) * 2 +
         static_cast<size_t>(kRowsTile) * kAccLd * sizeof(float);
}

}  // namespace

bool oracle_block_scores_fits(const OracleBlockScoresLaunch& a) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return a.d >= 16 && a.d <= 256 && a.d % 16 == 0 && aligned(a.q) && aligned(a.k) && a.q_head_stride % 8 == 0 &&
         a.q_row_stride % 8 == 0 && a.k_row_stride % 8 == 0 && a.b_q >= 1 && a.b_sq >= 1 && a.b_k >= 1;
}

void oracle_block_scores(const OracleBlockScoresLaunch& a) {
  if (!oracle_block_scores_fits(a)) throw std::invalid_argument("oracle block scores: shapes or alignment the kernel does not take");
  if (a.heads == 0 || a.nq == 0 || a.keys == 0 || a.rows == 0) return;
  Dims dims{(a.b_q + a.b_sq - 1) / a.b_sq, a.d + 8, 0};
  const int64_t row_tiles = (a.nq * dims.sampled + kRowsTile - 1) / kRowsTile;
  // The keys the last rows see, split so that the launch has a few CTAs per SM (a prompt's few row
  // tiles would otherwise leave most SMs idle); each share is many steps long, so Q is loaded rarely.
  const int64_t visible = std::min(a.keys, a.first_position + a.nq * a.b_q);
  const int64_t key_steps = (visible + kKeysTile - 1) / kKeysTile;
  const int64_t want = 4 * static_cast<int64_t>(device_sm_count());
  const int64_t splits = std::clamp<int64_t>((want + row_tiles * a.heads - 1) / (row_tiles * a.heads), 1, key_steps);
  dims.split_keys = (key_steps + splits - 1) / splits * kKeysTile;
  if (row_tiles >= (int64_t{1} << 31) || a.heads >= 65536 || splits >= 65536)
    throw std::invalid_argument("oracle block scores: too many tiles for one launch");
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(a.heads), static_cast<unsigned>(splits));
  cudaStream_t s = static_cast<cudaStream_t>(a.stream);
  // Register-level reduction where every warp's rows are one query block's and d has a variant.
  if (dims.sampled % 32 == 0 && (a.d == 64 || a.d == 128)) {
    auto launch = [&](auto kernel, size_t smem) {
      set_smem(reinterpret_cast<const void*>(kernel), smem, "oracle block scores", true);
      kernel<<<grid, kThreads, smem, s>>>(a, dims);
    };
    if (a.d == 64) {
      if (a.bf16) launch(oracle_block_scores_mma_kernel<__nv_bfloat16, 64>, mma_smem_bytes<64>());
      else launch(oracle_block_scores_mma_kernel<__half, 64>, mma_smem_bytes<64>());
    } else {
      if (a.bf16) launch(oracle_block_scores_mma_kernel<__nv_bfloat16, 128>, mma_smem_bytes<128>());
      else launch(oracle_block_scores_mma_kernel<__half, 128>, mma_smem_bytes<128>());
    }
  } else {
    const size_t smem = smem_bytes(dims.ld);
    if (a.bf16) {
      set_smem(reinterpret_cast<const void*>(oracle_block_scores_kernel<__nv_bfloat16>), smem, "oracle block scores", true);
      oracle_block_scores_kernel<__nv_bfloat16><<<grid, kThreads, smem, s>>>(a, dims);
    } else {
      set_smem(reinterpret_cast<const void*>(oracle_block_scores_kernel<__half>), smem, "oracle block scores", true);
      oracle_block_scores_kernel<__half><<<grid, kThreads, smem, s>>>(a, dims);
    }
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("oracle block scores kernel: ") + cudaGetErrorString(err));
}

}  // namespace hipstudio::gpu
