#include "kernels/cuda/vslash_blocks.h"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/fast_div.h"

namespace hipstudio::gpu {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Dynamic shared memory asked for at most: the 48 KB a block gets without opting in, less room for
// the static scan slots. 128k keys take 16 KB of bitmap.
constexpr int64_t kSharedBytes = 47 * 1024;

struct Params {
  VslashBlocksLaunch a;
  FastDiv by_b, by_bq;
};

// Sets bit u of the bitmap. Lanes marking the same word merge their bits first: neighbouring rows
// (and neighbouring offsets of S) select neighbouring tokens, so a warp's marks fall in one or two
// words, and 32 atomics on one word would run one after another.
__device__ void mark(uint32_t* bits, uint32_t u) {
  const cg::coalesced_group active = cg::coalesced_threads();
  const uint32_t word = u >> 5;
  const cg::coalesced_group same = cg::labeled_partition(active, word);
  const uint32_t merged = cg::reduce(same, 1u << (u & 31), cg::bit_or<uint32_t>());
  if (same.thread_rank() == 0) atomicOr(&bits[word], merged);
}

// hist[c] += 1, merged likewise over lanes with the same count.
__device__ void count_block(int32_t* hist, int32_t c) {
  const cg::coalesced_group same = cg::labeled_partition(cg::coalesced_threads(), c);
  if (same.thread_rank() == 0) atomicAdd(&hist[c], static_cast<int32_t>(same.size()));
}

// Set bits of [u, u + n).
__device__ int32_t bits_in(const uint32_t* bits, uint32_t u, uint32_t n) {
  int32_t c = 0;
  for (const uint32_t end = u + n; u < end;) {
    const uint32_t shift = u & 31, take = min(32u - shift, end - u);
    const uint32_t word = bits[u >> 5] >> shift;
    c += __popc(take == 32 ? word : word & ((1u << take) - 1));
    u += take;
  }
  return c;
}

// Calls f(j, count) for the blocks j of [j0, j1) holding a selected token, ascending. Where the
// bitmap is zero from a block's first bit to the end of its word, every block starting there that
// ends inside the word is empty: the walk goes on at the block holding the word's last bit (most
// words are zero at long contexts, where |V| + |S| b_q tokens spread over the whole range).
template <class F>
__device__ void for_held_blocks(const uint32_t* bits, const Params& p, uint32_t j0, uint32_t j1, F f) {
  const uint32_t b = static_cast<uint32_t>(p.a.b);
  for (uint32_t j = j0; j < j1;) {
    const uint32_t u = j * b;
    if ((bits[u >> 5] >> (u & 31)) == 0) {
      const uint32_t last = p.by_b.div(u | 31);  // block holding the word's last bit
      if (last > j) {
        j = last;
        continue;
      }
    }
    const int32_t c = bits_in(bits, u, b);
    if (c > 0) f(j, c);
    ++j;
  }
}

// Exclusive prefix sum over the block's threads, and the total.
__device__ uint64_t exclusive_sum(uint64_t v, uint64_t* warp_sums, uint64_t* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint64_t x = v;
  for (int s = 1; s < 32; s <<= 1) {
    const uint64_t y = __shfl_up_sync(0xffffffffu, x, s);
    if (lane >= s) x += y;
  }
  if (lane == 31) warp_sums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    uint64_t w = lane < kWarps ? warp_sums[lane] : 0;
    for (int s = 1; s < kWarps; s <<= 1) {
      const uint64_t y = __shfl_up_sync(0xffffffffu, w, s);
      if (lane >= s) w += y;
    }
    if (lane < kWarps) warp_sums[lane] = w;
  }
  __syncthreads();
  *total = warp_sums[kWarps - 1];
  return (warp > 0 ? warp_sums[warp - 1] : 0) + x - v;
}

// Block (query block, head). Shared memory: the range's bitmap (one bit per key of [lo b, hi b)),
// then the histogram hist[c] = blocks holding c selected tokens, c in [0, b].
__global__ void __launch_bounds__(kThreads) vslash_blocks_kernel(Params p) {
  extern __shared__ uint32_t shared[];
  __shared__ uint64_t warp_sums[kWarps];
  __shared__ int32_t cut_count, cut_room;
  const VslashBlocksLaunch& a = p.a;
  const int64_t qb = blockIdx.x, h = blockIdx.y, row = h * a.qbs + qb;
  const int32_t lo = static_cast<int32_t>(a.lo), kb = static_cast<int32_t>(a.kb);
  const int32_t nb = static_cast<int32_t>(a.hi[qb]) - lo;
  int32_t* out = a.blocks + row * a.kb;
  if (nb <= kb) {  // every block of the range, ascending (none for an empty range)
    for (int32_t j = threadIdx.x; j < kb; j += kThreads) out[j] = j < nb ? lo + j : -1;
    if (threadIdx.x == 0) a.counts[row] = nb;
    return;
  }
  const uint32_t b = static_cast<uint32_t>(a.b), tokens = static_cast<uint32_t>(nb) * b;
  const uint32_t words = (tokens + 31) / 32;
  const int32_t first = lo * static_cast<int32_t>(b);
  uint32_t* bits = shared;
  int32_t* hist = reinterpret_cast<int32_t*>(shared + words);
  for (uint32_t w = threadIdx.x; w < words; w += kThreads) bits[w] = 0;
  for (uint32_t c = threadIdx.x; c <= b; c += kThreads) hist[c] = 0;
  __syncthreads();

  // The selected tokens inside the range: V, then p_i - o for the pairs (o in S, row i < tq).
  const int32_t* vertical = a.vertical + a.vertical_begin[h];
  const int32_t nv = a.vertical_begin[h + 1] - a.vertical_begin[h];
  for (int32_t x = threadIdx.x; x < nv; x += kThreads) {
    const uint32_t u = static_cast<uint32_t>(vertical[x] - first);  // below the range: wraps past it
    if (u < tokens) mark(bits, u);
  }
  const int32_t* slash = a.slash + a.slash_begin[h];
  const int32_t pairs = (a.slash_begin[h + 1] - a.slash_begin[h]) * static_cast<int32_t>(a.b_q);
  const int64_t row_begin = qb * a.b_q;
  for (int32_t x = threadIdx.x; x < pairs; x += kThreads) {
    const uint32_t o = p.by_bq.div(static_cast<uint32_t>(x)), t = static_cast<uint32_t>(x) - o * p.by_bq.divisor();
    if (row_begin + t >= a.tq) continue;  // rows past tq in the last query block
    const uint32_t u = static_cast<uint32_t>(a.row_end[row_begin + t] - slash[o] - first);
    if (u < tokens) mark(bits, u);
  }
  __syncthreads();

  // Each thread walks a contiguous run of blocks, so that its picks come out in ascending order.
  const uint32_t per = (static_cast<uint32_t>(nb) + kThreads - 1) / kThreads;
  const uint32_t j0 = min(static_cast<uint32_t>(nb), threadIdx.x * per), j1 = min(static_cast<uint32_t>(nb), j0 + per);
  for_held_blocks(bits, p, j0, j1, [&](uint32_t, int32_t c) { count_block(hist, c); });
  __syncthreads();
  // The threshold: the largest count `cut` with at least kb blocks holding >= cut (1 when fewer
  // than kb blocks hold a token: all of them are kept); every block above it is kept and the first
  // `room` blocks at it.
  if (threadIdx.x == 0) {
    int32_t above = 0, c = static_cast<int32_t>(b);
    while (c > 1 && above + hist[c] < kb) above += hist[c--];
    cut_count = c, cut_room = kb - above;
  }
  __syncthreads();
  const int32_t cut = cut_count, room = cut_room;
  uint32_t n_above = 0, n_tied = 0;
  for_held_blocks(bits, p, j0, j1, [&](uint32_t, int32_t c) { n_above += c > cut, n_tied += c == cut; });
  // Both counts in one sum (each at most nb < 2^31: the low half never carries).
  uint64_t total = 0;
  const uint64_t before = exclusive_sum((uint64_t{n_above} << 32) | n_tied, warp_sums, &total);
  const int32_t above_before = static_cast<int32_t>(before >> 32), tied_before = static_cast<int32_t>(before & 0xffffffffu);
  int32_t slot = above_before + min(tied_before, room), tied_rank = tied_before;
  for_held_blocks(bits, p, j0, j1, [&](uint32_t j, int32_t c) {
    bool keep = c > cut;
    if (c == cut) keep = tied_rank++ < room;
    if (keep) out[slot++] = lo + static_cast<int32_t>(j);
  });
  const int32_t kept = static_cast<int32_t>(total >> 32) + min(static_cast<int32_t>(total & 0xffffffffu), room);
  for (int32_t j = kept + static_cast<int32_t>(threadIdx.x); j < kb; j += kThreads) out[j] = -1;
  if (threadIdx.x == 0) a.counts[row] = kept;
}

int64_t shared_bytes(const VslashBlocksLaunch& a) { return ((a.range_tokens + 31) / 32 + a.b + 1) * 4; }

}  // namespace

bool vslash_blocks_fit(const VslashBlocksLaunch& a) {
  const int64_t int32_max = 2147483647;
  if (a.b < 1 || a.b_q < 1 || a.kb < 1 || a.lo < 0 || a.range_tokens < 0 || a.max_slash < 0) return false;
  if (a.b > kSharedBytes || a.hq > 65535 || a.qbs > int32_max || a.kb > int32_max) return false;
  // Tokens (the range's end included) and |S| x b_q pairs in int32.
  if (a.lo * a.b + a.range_tokens >= int32_max || a.tq >= int32_max || a.max_slash * a.b_q >= int32_max) return false;
  return shared_bytes(a) <= kSharedBytes;
}

void vslash_select_blocks(const VslashBlocksLaunch& a) {
  if (!vslash_blocks_fit(a))
    throw std::invalid_argument("vslash blocks: ranges of " + std::to_string(a.range_tokens) + " keys with blocks of " +
                                std::to_string(a.b) + " do not fit the kernel (use the tensor ops)");
  if (a.qbs == 0 || a.hq == 0) return;
  Params p{a, FastDiv(static_cast<uint32_t>(a.b)), FastDiv(static_cast<uint32_t>(a.b_q))};
  const dim3 grid(static_cast<unsigned>(a.qbs), static_cast<unsigned>(a.hq));
  vslash_blocks_kernel<<<grid, kThreads, static_cast<size_t>(shared_bytes(a)), static_cast<cudaStream_t>(a.stream)>>>(p);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("vslash blocks kernel: ") + cudaGetErrorString(err));
}

}  // namespace hipstudio::gpu
