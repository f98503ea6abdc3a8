// Block-sparse HiP attention for prefill on Hopper (sm_90a): the mma.sync kernel's algorithm
// (kernels/cuda/sparse_attention.cu, KG 1: CTAs of 64 query rows, 4 warps, every key of a tile)
// with both products on wgmma, one warpgroup per CTA (v18, kernels/BENCHMARKS.md).
//
// Why: the mma.sync kernel spends most of its issue slots outside the tensor cores (ncu, v15:
// HMMA 14 % of 449 M instructions at 32k, stalls on ldmatrix -> mma); wgmma reads K and V straight
// from shared memory, 64 rows x N per instruction, so the ldmatrix and most of the per-mma
// instructions disappear. Same pipeline as the mma.sync kernel: key ids two tiles ahead, K / V rows
// gathered by 16-byte cp.async one tile ahead into two stages, here stored in the 128-byte swizzle
// wgmma reads (kernels/cuda/sm90a/wgmma.cuh); Q's A fragments in registers; per chunk of keys
// S = Q K^T (K-major B), the shared mask and online softmax (attention_parts.cuh), then
// O += P V (P from registers, V N-major). Each product is waited for before its result is read;
// the CTAs resident on an SM (3 at d 128) overlap one another's waits.
#include <cstdint>

#include "kernels/cuda/attention_parts.cuh"
#include "kernels/cuda/attention_wgmma.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/sm90a/wgmma.cuh"

namespace hipstudio::gpu {
namespace {

// The CTAs per SM the registers are sized for: a compile-time knob for
// scripts/dev/device_variants.sh (v18: 3 against 2, 1.03 against 1.24 ms at 32k). One softmax
// step covers a whole 64-key tile (S in 32 registers); two 32-key steps measured slower (v18).
#ifndef HIPSTUDIO_WGMMA_MIN_CTAS
#define HIPSTUDIO_WGMMA_MIN_CTAS 3
#endif

template <int D>
__host__ __device__ constexpr uint32_t tile_bytes() {  // one stage of K (or V): kBK rows of D elements
  return static_cast<uint32_t>(kBK) * D * 2;
}
template <int D>
constexpr size_t wgmma_smem_bytes() {  // 1 KB of slack to put the tiles on a 1024-byte line
  return 1024 + 4 * static_cast<size_t>(tile_bytes<D>()) + kKeySlots * kBK * sizeof(TileKey);
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Pins the accumulators after a wgmma_wait: the compiler sees wgmma's outputs as written when the
// instruction issues, so without this it could read them before the wait.
template <int NT>
__device__ __forceinline__ void fence_accumulators(float (*d)[4]) {
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int x = 0; x < 4; ++x) asm volatile("" : "+f"(d[t][x])::"memory");
}
#endif

template <class T, int D>
__global__ void __launch_bounds__(kThreads, HIPSTUDIO_WGMMA_MIN_CTAS) sparse_attention_wgmma(const AttnArgs a) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int KS = D / 16;  // k-steps of Q K^T
  constexpr int NT = D / 8;   // n-tiles of O
  constexpr int kVecs = D / 8;
  constexpr int kSTiles = kBK / 8;  // n-tiles of S: one softmax step a tile
  constexpr uint32_t kTile = tile_bytes<D>();
  constexpr uint32_t kHalf = kBK * 128;  // one 64-column half of a tile
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  uint8_t* smem = smem_raw + ((1024 - (raw_addr & 1023)) & 1023);
  uint8_t* sk_all = smem;              // [2][kTile]: K stages, swizzled
  uint8_t* sv_all = smem + 2 * kTile;  // [2][kTile]: V stages
  TileKey* skey_all = reinterpret_cast<TileKey*>(smem + 4 * kTile);  // [kKeySlots][kBK]
  const uint32_t sk_addr = static_cast<uint32_t>(__cvta_generic_to_shared(sk_all));
  const uint32_t sv_addr = static_cast<uint32_t>(__cvta_generic_to_shared(sv_all));

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gq = lane >> 2, cq = lane & 3;
  const CtaCoords c = cta_coords(a);
  if (c.r0 >= c.r1) return;  // the whole warpgroup together
  const int g = c.h / (a.hq / a.hkv);
  const int d = a.d;
  const int32_t* item_blocks = a.blocks + static_cast<int64_t>(c.item) * a.kb;
  if (tid * 32 < a.kb) prefetch_l1(item_blocks + tid * 32);
  int e_lo, e_hi;
  row_ends(a, c.b, c.r0, c.r1, e_lo, e_hi);
  const KeyList<int> kl = key_list<int>(a, c, e_hi, false);
  const int n_tiles = (kl.total + kBK - 1) / kBK;

  // Warp w owns rows [16w, 16w + 16) of the CTA's tile (wgmma's A and D layout); rows past the
  // CTA's end compute on zero Q and are not stored (every warp takes part in every wgmma).
  const int row0 = c.r0 + warp * 16 + gq, row1 = row0 + 8;
  const int e0 = row0 < c.r1 ? visible_end(a, c.b, row0) : -1;
  const int e1 = row1 < c.r1 ? visible_end(a, c.b, row1) : -1;

  float o[NT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

  const T* kbase = static_cast<const T*>(a.k) + kv_offset(a, a.ks, c.b) + g * a.ks.h;
  const T* vbase = static_cast<const T*>(a.v) + kv_offset(a, a.vs, c.b) + g * a.vs.h;
  // Each thread copies one 16-byte chunk (column piece) of every kCopyStep-th row of a tile.
  constexpr int kCopyStep = kThreads / kVecs;
  const int copy_chunk = tid % kVecs, copy_row0 = tid / kVecs;
  const uint4* kcol = reinterpret_cast<const uint4*>(kbase + copy_chunk * 8);
  const uint4* vcol = reinterpret_cast<const uint4*>(vbase + copy_chunk * 8);
  const bool copy_col_ok = copy_chunk * 8 < d;
  const unsigned k_row16 = static_cast<unsigned>(a.ks.t / 8), v_row16 = static_cast<unsigned>(a.vs.t / 8);
  auto key_ids = [&](int tile, int slot, int blk) -> bool {
    return put_tile_keys(skey_all + slot * kBK, kl, tile, blk, tid, k_row16, v_row16, e_lo);
  };
  auto block_of = [&](int tile) -> int { return tid < kBK ? kl.block_of(tile * kBK + tid) : 0; };
  auto issue = [&](int stage, int slot) {  // K and V rows into the swizzled stage, zero-filled where no key
    const TileKey* sks = skey_all + slot * kBK;
    uint8_t* sk = sk_all + stage * kTile;
    uint8_t* sv = sv_all + stage * kTile;
#pragma unroll
    for (int j = copy_row0, i = 0; i < kBK / kCopyStep; ++i, j += kCopyStep) {
      const TileKey tk = sks[j];
      const bool valid = tk.key >= 0 && copy_col_ok;
      const uint32_t off = swizzled_chunk_offset(j, copy_chunk, kBK);
      cp_async16(sk + off, kcol + tk.k_off, valid);
      cp_async16(sv + off, vcol + tk.v_off, valid);
    }
    cp_async_commit();
  };
  bool masked_cur = false, masked_next = false;  // the mma.sync kernel's pipeline (attention_parts.cuh)
  if (n_tiles > 0) {
    masked_cur = key_ids(0, 0, block_of(0));
    issue(0, 0);
    if (n_tiles > 1) masked_next = key_ids(1, 1, block_of(1));
  }
  // Q's A fragments (zero for padding rows and columns), loaded while the first tile flies.
  const bool q0ok = row0 < c.r1, q1ok = row1 < c.r1;
  uint32_t qf[KS][4];
  load_q_fragments<T, KS>(qf, a, c, row0, row1, q0ok, q1ok, d, cq);

  for (int i = 0; i < n_tiles; ++i) {
    const int stage = i & 1, slot = i % kKeySlots;
    await_tile(i, n_tiles, issue);
    fence_proxy_async_smem();  // this thread's copies, visible to wgmma's reads
    const int blk2 = i + 2 < n_tiles ? block_of(i + 2) : 0;  // in flight during the math
    __syncthreads();  // every thread's copies of this tile landed
    const uint32_t kst = sk_addr + stage * kTile, vst = sv_addr + stage * kTile;
    const TileKey* skey = skey_all + slot * kBK;
    // S = Q K^T: B is the K tile (keys), K-major; k-step ks reads columns
    // 16 ks .. 16 ks + 15, i.e. 32 bytes into the half ks / 4 (the swizzle is on addresses).
    float s[kSTiles][4];
#pragma unroll
    for (int nt = 0; nt < kSTiles; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const uint64_t desc = wgmma_desc_sw128(kst + (ks >> 2) * kHalf + (ks & 3) * 32, 16, 1024);
      wgmma_rs<T, kBK, 0>(s, qf[ks], desc, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_accumulators<kSTiles>(s);
    if (a.cap_out != 0.f) cap_chunk<kSTiles>(s, a.cap_in, a.cap_out);
    if (masked_cur) mask_chunk<kSTiles>(s, skey, 0, cq, e0, e1);
    softmax_chunk<kSTiles, NT>(s, o, m0, m1, l0, l1, a.scale_log2);
    uint32_t pf[kBK / 16][4];
    pack_p<T, kSTiles>(s, pf);
    // O += P V: B is V's rows 16 kk .. (keys) x D columns, N-major: 8-row groups 1024
    // bytes apart (stride byte offset), the 64-column halves kHalf apart (leading byte offset).
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const uint64_t desc = wgmma_desc_sw128(vst + 16 * kk * 128, kHalf, 1024);
      wgmma_rs<T, D, 1>(o, pf[kk], desc, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_accumulators<NT>(o);
    finish_tile(i, n_tiles, 0, blk2, key_ids, masked_cur, masked_next);
  }

  l0 = row_sum(l0), l1 = row_sum(l1);
  store_rows<T, NT>(a, c, o, l0, l1, row0, row1, q0ok, q1ok, d, cq);
#else
  (void)a;
  __trap();  // a non-sm_90a copy of this kernel must never run (it would leave the output unwritten)
#endif
}

}  // namespace

void launch_sparse_attention_wgmma(const AttnArgs& a, ElementType dtype, int d_pad, unsigned grid, cudaStream_t stream) {
  auto launch = [&](auto kernel, size_t smem) {
    set_smem(reinterpret_cast<const void*>(kernel), smem, "sparse attention (wgmma)", true);
    kernel<<<grid, kThreads, smem, stream>>>(a);
  };
  const bool bf16 = dtype == ElementType::kBF16;
  if (d_pad == 64) {
    if (bf16) launch(sparse_attention_wgmma<__nv_bfloat16, 64>, wgmma_smem_bytes<64>());
    else launch(sparse_attention_wgmma<__half, 64>, wgmma_smem_bytes<64>());
  } else {
    if (bf16) launch(sparse_attention_wgmma<__nv_bfloat16, 128>, wgmma_smem_bytes<128>());
    else launch(sparse_attention_wgmma<__half, 128>, wgmma_smem_bytes<128>());
  }
  HIP_CUDA_CHECK_LAUNCH("sparse_attention_wgmma");
}

}  // namespace hipstudio::gpu
