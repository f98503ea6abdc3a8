// Gather floors: how fast can this GPU move key rows into the SMs the way the HiP searches do,
// with nothing else in the kernel? Two measurements bound what the mask kernels can reach
// (kernels/BENCHMARKS.md, "Floors, measured"):
//
//   l2      Every warp gathers random 2-key blocks (2 x 256 B: d 128, bf16) of one KV head's keys
//           (T rows, L2-resident after a warm-up pass) by cp.async.cg into its own shared-memory
//           ring, S tiles of 8 blocks in flight, as the prefill searches' tile loop does. Prints
//           the rows' bytes per second: the prefill mask kernel's bytes divided by the best of
//           these is its floor.
//   rounds  The decode refresh's skeleton: 32 searches (4 per KV head), C CTAs each, R dependent
//           rounds; in each round a search gathers 512 random blocks of its KV head's keys (the
//           4 heads of a group the same blocks in round 0, as the first iteration does), then a
//           CTA barrier. Inputs rotate over sets larger than L2, so rounds read DRAM as the
//           refresh does. No scoring, selection or exchange between CTAs: a floor for the refresh.
//
// Built with the kernels as build*/hipstudio_gather_floor; it takes the kernels' own copy and
// error helpers (kernels/cuda/common.cuh) and timer (gpu::EventPair), so it gathers exactly as they do.
// Usage: hipstudio_gather_floor [tokens=131072]   (scripts/dev/device_run.sh floors on the GPU machine)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/probe/timing.cuh"

namespace {

using hipstudio::gpu::cp_async16;
using hipstudio::gpu::cp_async_commit;
using hipstudio::gpu::cp_async_wait;

constexpr int kBlockBytes = 512;                 // 2 keys x 128 dims x bf16
constexpr int kPieces = kBlockBytes / 16;        // 16-byte copies a block: one per lane
constexpr int kTileBlocks = 8;                   // a search tile: 16 keys
constexpr int kKvHeads = 8;
constexpr int kGroup = 4;                        // query heads per KV head
constexpr int kRoundBlocks = 512;                // a refresh iteration: 512 branches, 2 keys each

__device__ __forceinline__ uint32_t mix(uint32_t x) {  // a cheap 32-bit hash (lowbias32)
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// Keeps the copies alive: the compiler cannot drop what a later read might print.
__device__ __forceinline__ void keep(const uint4* ring, unsigned* sink) {
  if (ring[threadIdx.x & 31].x == 0x9e3779b9u) atomicAdd(sink, 1u);
}

template <int S>
__global__ void gather_l2(const uint4* keys, uint32_t blocks, int tiles, uint32_t seed, unsigned* sink) {
  extern __shared__ uint4 ring_all[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint4* ring = ring_all + warp * S * kTileBlocks * kPieces;
  const uint32_t wid = blockIdx.x * (blockDim.x >> 5) + warp;
  auto issue = [&](int t) {
    uint4* stage = ring + (t % S) * kTileBlocks * kPieces;
#pragma unroll
    for (int j = 0; j < kTileBlocks; ++j) {
      const uint32_t blk = mix(seed ^ mix(wid * 0x10001u + t * kTileBlocks + j)) % blocks;
      cp_async16(stage + j * kPieces + lane, keys + static_cast<size_t>(blk) * kPieces + lane, true);
    }
    cp_async_commit();
  };
  for (int t = 0; t < S - 1; ++t) issue(t);
  for (int t = 0; t < tiles; ++t) {
    if (t + S - 1 < tiles) issue(t + S - 1); else cp_async_commit();
    cp_async_wait<S - 1>();
    __syncwarp();
  }
  cp_async_wait<0>();
  keep(ring, sink);
}

// Share of a search's blocks in round r that the 4 heads of its KV group also gather, for random
// inputs: f such that the group's distinct blocks are 1 - 3f/4 of the 4 searches' blocks, with
// that fraction taken from a simulation of the reference's search at 128k (Kb 256, 4 heads
// choosing independently): 0.25, 0.468, 0.682, 0.828, 0.907, 0.953, 0.978, 0.989 an iteration.
__constant__ float kSharedShare[8] = {1.f, 0.709f, 0.424f, 0.229f, 0.124f, 0.063f, 0.029f, 0.015f};

// One CTA = one search's share (1 / C) of each round's blocks. shared_rounds: round r draws the
// group's common blocks with probability kSharedShare[r] (else round 0 alone is common).
__global__ void gather_rounds(const uint4* keys, uint32_t head_blocks, int ctas_per_search, int rounds, uint32_t seed,
                              bool shared_rounds, unsigned* sink) {
  extern __shared__ uint4 buf[];
  const int search = blockIdx.x / ctas_per_search, part = blockIdx.x % ctas_per_search;
  const int head = search / kGroup;
  const uint4* kh = keys + static_cast<size_t>(head) * head_blocks * kPieces;
  const int share = kRoundBlocks / ctas_per_search;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int r = 0; r < rounds; ++r) {
    for (int j = warp; j < share; j += warps) {
      const uint32_t slot = part * share + j;
      const float common = r == 0 ? 1.f : shared_rounds && r < 8 ? kSharedShare[r] : 0.f;
      const bool group = (mix(seed ^ (search * 7919u + r * 65537u + slot)) & 0xffffu) < common * 65536.f;
      const uint32_t who = group ? 1000u + head : static_cast<uint32_t>(search);
      const uint32_t blk = mix(seed ^ mix(who * 0x9E3779B1u + r * 4096u + slot)) % head_blocks;
      cp_async16(buf + j * kPieces + lane, kh + static_cast<size_t>(blk) * kPieces + lane, true);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
  }
  keep(buf, sink);
}

// Median ms of `repeats` event-timed launches after 3 warm-up ones (launch(i): the i-th).
template <class Launch>
float time_ms(Launch launch, int repeats) {
  for (int i = 0; i < 3; ++i) launch(i);
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    hipstudio::gpu::EventPair e;
    e.start();
    launch(i);
    ms.push_back(e.stop_ms());
  }
  HIP_CUDA_CHECK(cudaGetLastError());
  return static_cast<float>(hipstudio::probe::median(ms));
}

template <int S>
void l2_row(const uint4* keys, uint32_t blocks, int warps_per_cta, const cudaDeviceProp& prop, unsigned* sink) {
  const int smem = warps_per_cta * S * kTileBlocks * kBlockBytes;
  if (smem > static_cast<int>(prop.sharedMemPerBlockOptin)) return;
  const int sms = prop.multiProcessorCount;
  HIP_CUDA_CHECK(cudaFuncSetAttribute(gather_l2<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0;
  HIP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gather_l2<S>, warps_per_cta * 32, smem));
  if (per_sm == 0) return;
  const int ctas = per_sm * sms, tiles = 2048;
  const double bytes = static_cast<double>(ctas) * warps_per_cta * tiles * kTileBlocks * kBlockBytes;
  const float ms = time_ms(
      [&](int i) { gather_l2<S><<<ctas, warps_per_cta * 32, smem>>>(keys, blocks, tiles, 77u + i, sink); }, 9);
  std::printf("| %d | %d | %d | %d | %.2f | %.1f |\n", S, warps_per_cta, per_sm, per_sm * warps_per_cta,
              bytes / 1e9, bytes / (ms * 1e-3) / 1e12);
}

int run(int argc, char** argv) {
  const long tokens = argc > 1 ? std::atol(argv[1]) : 131072;
  if (tokens < 4096 || tokens % 2 != 0 || tokens > (1L << 24)) {
    std::fprintf(stderr, "gather_floor: tokens must be an even number in [4096, 16777216], not %ld\n", tokens);
    return 2;
  }
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gather_floor: no usable CUDA GPU here (%s); run it on a GPU machine\n",
                 probe != cudaSuccess ? cudaGetErrorString(probe) : "no device");
    return 1;
  }
  cudaDeviceProp prop{};
  HIP_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const uint32_t head_blocks = static_cast<uint32_t>(tokens / 2);
  const size_t head_bytes = static_cast<size_t>(head_blocks) * kBlockBytes;
  const size_t set_bytes = head_bytes * kKvHeads;
  // Sets for the cold rounds: at least 4 x L2 in all.
  const int sets = static_cast<int>(std::max<size_t>(2, (4 * static_cast<size_t>(prop.l2CacheSize)) / set_bytes + 1));
  std::printf("device %s, %d SMs, L2 %.0f MB; T %ld: one KV head's keys %.1f MB, %d sets of %.0f MB\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize / 1e6, tokens, head_bytes / 1e6, sets, set_bytes / 1e6);
  uint4* keys = nullptr;
  unsigned* sink = nullptr;
  HIP_CUDA_CHECK(cudaMalloc(&keys, set_bytes * sets));
  HIP_CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  HIP_CUDA_CHECK(cudaMemset(keys, 1, set_bytes * sets));
  HIP_CUDA_CHECK(cudaMemset(sink, 0, sizeof(unsigned)));

  std::printf("\nl2: random 512-byte blocks of one KV head (%.1f MB, warm), cp.async.cg into per-warp rings\n\n",
              head_bytes / 1e6);
  std::printf("| tiles in flight a warp | warps a CTA | CTAs an SM | warps an SM | GB moved | TB/s |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (int w : {4, 8}) {
    l2_row<2>(keys, head_blocks, w, prop, sink);
    l2_row<3>(keys, head_blocks, w, prop, sink);
    l2_row<4>(keys, head_blocks, w, prop, sink);
    l2_row<6>(keys, head_blocks, w, prop, sink);
    l2_row<8>(keys, head_blocks, w, prop, sink);
  }

  std::printf("\nrounds: 32 searches x %d blocks a round from DRAM (sets rotated), CTA barrier between rounds;\n"
              "common blocks of a KV group's 4 searches: round 0 only, or as many as random searches share\n\n",
              kRoundBlocks);
  std::printf("| common blocks | CTAs a search | rounds | us | us a round (slope from 1 round) |\n"
              "| --- | --- | --- | --- | --- |\n");
  for (bool shared : {false, true}) {
    for (int c : {2, 4}) {  // one CTA would need 256 KB of shared memory
      const int smem = kRoundBlocks / c * kBlockBytes;
      HIP_CUDA_CHECK(cudaFuncSetAttribute(gather_rounds, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      const char* what = shared ? "as random searches share" : "round 0 only";
      float one = 0;
      for (int rounds : {1, 4, 8}) {
        const float ms = time_ms(
            [&](int i) {
              const uint4* set = keys + (static_cast<size_t>(i % sets) * set_bytes) / 16;
              gather_rounds<<<32 * c, 512, smem>>>(set, head_blocks, c, rounds, 991u + i, shared, sink);
            },
            41);
        if (rounds == 1) {
          one = ms;
          std::printf("| %s | %d | %d | %.1f | |\n", what, c, rounds, ms * 1e3);
        } else {
          std::printf("| %s | %d | %d | %.1f | %.2f |\n", what, c, rounds, ms * 1e3, (ms - one) * 1e3 / (rounds - 1));
        }
      }
    }
  }
  unsigned hits = 0;
  HIP_CUDA_CHECK(cudaMemcpy(&hits, sink, sizeof hits, cudaMemcpyDeviceToHost));
  std::printf("\n(sink %u)\n", hits);
  HIP_CUDA_CHECK(cudaFree(keys));
  HIP_CUDA_CHECK(cudaFree(sink));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const hipstudio::gpu::CudaError& e) {  // a failed CUDA call, named with its message
    std::fprintf(stderr, "gather_floor: %s\n", e.what());
    return 1;
  }
}
