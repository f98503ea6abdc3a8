#pragma once
// Hopper warpgroup MMA (wgmma, sm_90a) for kernels/cuda/sm90a/sparse_attention_wgmma.cu: shared
// memory descriptors for tiles stored in the 128-byte swizzle, the fences and groups around the
// asynchronous MMA, and m64nNk16 with A in registers (f32 accumulators). Compiled only for
// sm_90a (kernels/CMakeLists.txt); the PTX ISA's "Asynchronous Warpgroup Level Matrix" sections
// define every layout used here.
//
// Tile layout (both operands of the attention: K for S = Q K^T, V for O += P V): rows of D
// elements (keys), 64-element (128-byte) column halves stored one after the other, each half a
// [rows][128 B] block whose 16-byte chunks are XOR-swizzled by the row's index mod 8 (the
// hardware's Swizzle<3,4,3>, so every block starts on a 1024-byte line).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace hipstudio::gpu {

// Byte offset of the 16-byte chunk `chunk` (elements 8 chunk .. 8 chunk + 7) of row `row` in a
// tile of `rows` rows stored as above.
__host__ __device__ constexpr uint32_t swizzled_chunk_offset(int row, int chunk, int rows) {
  return static_cast<uint32_t>((chunk >> 3) * rows * 128 + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

// A wgmma shared-memory descriptor: start address, leading and stride byte offsets (all in 16-byte
// units, 14 bits each), 128-byte swizzle (mode 1 in bits 62-63), base offset 0 (blocks on 1024-byte lines).
__host__ __device__ constexpr uint64_t wgmma_desc_sw128(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) | static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16 |
         static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32 | uint64_t{1} << 62;
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Orders this thread's register writes before the next wgmma reads them (A fragments,
// accumulators), as the ISA requires before the first wgmma of a batch.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Makes this thread's generic-proxy shared-memory writes (cp.async's included) visible to the
// async proxy that wgmma reads shared memory through.
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// The accumulators of a warp's 16 rows of m64nNk16: d[n-tile of 8 columns][4], lane (g, c) holding
// (g, 2c), (g, 2c + 1), (g + 8, 2c), (g + 8, 2c + 1) of each n-tile, as mma.m16n8k16's C. Inline
// PTX needs every operand spelled out: the accumulators of 8 n-tiles (64 columns) per
// HIPSTUDIO_WGMMA_D8, and one instruction per N with its operand numbers.
#define HIPSTUDIO_WGMMA_D8(o)                                                                       \
  "+f"(d[o][0]), "+f"(d[o][1]), "+f"(d[o][2]), "+f"(d[o][3]), "+f"(d[o + 1][0]), "+f"(d[o + 1][1]),     \
      "+f"(d[o + 1][2]), "+f"(d[o + 1][3]), "+f"(d[o + 2][0]), "+f"(d[o + 2][1]), "+f"(d[o + 2][2]),    \
      "+f"(d[o + 2][3]), "+f"(d[o + 3][0]), "+f"(d[o + 3][1]), "+f"(d[o + 3][2]), "+f"(d[o + 3][3]),    \
      "+f"(d[o + 4][0]), "+f"(d[o + 4][1]), "+f"(d[o + 4][2]), "+f"(d[o + 4][3]), "+f"(d[o + 5][0]),    \
      "+f"(d[o + 5][1]), "+f"(d[o + 5][2]), "+f"(d[o + 5][3]), "+f"(d[o + 6][0]), "+f"(d[o + 6][1]),    \
      "+f"(d[o + 6][2]), "+f"(d[o + 6][3]), "+f"(d[o + 7][0]), "+f"(d[o + 7][1]), "+f"(d[o + 7][2]),    \
      "+f"(d[o + 7][3])
#define HIPSTUDIO_WGMMA_IN "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(scale_d), "n"(TransB)

#define HIPSTUDIO_WGMMA_M64N64K16(TY)                                                                  \
  asm volatile(                                                                                          \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                       \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n" \
      : HIPSTUDIO_WGMMA_D8(0)                                                                            \
      : HIPSTUDIO_WGMMA_IN)

#define HIPSTUDIO_WGMMA_M64N128K16(TY)                                                                  \
  asm volatile(                                                                                          \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                       \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n" \
      : HIPSTUDIO_WGMMA_D8(0), HIPSTUDIO_WGMMA_D8(8)                                                     \
      : HIPSTUDIO_WGMMA_IN)

// D (+)= A B for the warpgroup's 64 rows: A from registers (this warp's 16 rows, mma.m16n8k16's A
// fragment layout), B (16 x N) from the descriptor, K-major (TransB 0) or N-major (TransB 1);
// scale_d 0 ignores D's old value.
template <class T, int N, int TransB>
__device__ __forceinline__ void wgmma_rs(float (*d)[4], const uint32_t* a, uint64_t desc, int scale_d) {
  static_assert(N == 64 || N == 128, "wgmma_rs: N of 64 or 128 (the attention's shapes)");
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (N == 64) {
    if constexpr (bf16) HIPSTUDIO_WGMMA_M64N64K16("bf16");
    else HIPSTUDIO_WGMMA_M64N64K16("f16");
  } else {
    if constexpr (bf16) HIPSTUDIO_WGMMA_M64N128K16("bf16");
    else HIPSTUDIO_WGMMA_M64N128K16("f16");
  }
}

#endif  // sm_90a

}  // namespace hipstudio::gpu
