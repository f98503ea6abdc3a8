#include "kernels/cuda/quest_bound.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace hipstudio::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxDim = 256;
// Sampled rows whose sums a thread keeps in registers at once, and the head dims that many rows take
// in shared memory: a whole query block's rows (32 at b_q 64, b_sq 2) for d <= 128, so each page's
// minimum and maximum are read once per block; 8 rows up to d 256.
constexpr int kManyRows = 32, kManyRowsDim = 128;
constexpr int kFewRows = 8;

// Block (query block x page tile, head): the block's sampled rows kRows at a time into shared
// memory; each thread holds its page's sums of those rows in registers, so each page's minimum and
// maximum are read once per kRows rows (the kernel is bound by those reads otherwise). Each row's sum
// still runs over d ascending, and the rows' maximum is taken in row order: the bits are unchanged.
// Pages starting after the block's last row are in none of its search ranges: -inf, not scored.
template <int kRows, int kDim>
__global__ void quest_scores_kernel(QuestBoundLaunch a) {
  __shared__ double rows[kRows][kDim];
  const double neg_inf = __longlong_as_double(static_cast<long long>(0xfff0000000000000ULL));
  const int64_t tiles = (a.pages + kThreads - 1) / kThreads;
  const int64_t qb = blockIdx.x / tiles, page = (blockIdx.x % tiles) * kThreads + threadIdx.x;
  const int64_t h = blockIdx.y, kv = h / (a.hq / a.hkv);
  const double* mn = a.page_min + kv * a.d * a.pages;
  const double* mx = a.page_max + kv * a.d * a.pages;
  const int64_t row_begin = qb * a.b_q, row_end = a.tq < (qb + 1) * a.b_q ? a.tq : (qb + 1) * a.b_q;
  const int64_t last_position = a.key_offset + row_end - 1;
  const bool scored = page < a.pages && page * a.page_size <= last_position;
  double best = neg_inf;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows * a.b_sq) {
    const int64_t left = (row_end - r0 + a.b_sq - 1) / a.b_sq;
    const int n = static_cast<int>(left < kRows ? left : kRows);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < n * a.d; e += kThreads)
      rows[e / a.d][e % a.d] = a.q[(h * a.tq + r0 + (e / a.d) * a.b_sq) * a.d + e % a.d];
    __syncthreads();
    if (!scored) continue;
    double s[kRows];
#pragma unroll
    for (int t = 0; t < kRows; ++t) s[t] = 0.0;
    for (int64_t e = 0; e < a.d; ++e) {
      const double lo_key = mn[e * a.pages + page], hi_key = mx[e * a.pages + page];
#pragma unroll
      for (int t = 0; t < kRows; ++t) {
        if (t < n) {
          const double lo = __dmul_rn(rows[t][e], lo_key), hi = __dmul_rn(rows[t][e], hi_key);
          s[t] = __dadd_rn(s[t], lo < hi ? hi : lo);  // std::max(lo, hi): the first unless it is the smaller
        }
      }
    }
#pragma unroll
    for (int t = 0; t < kRows; ++t)
      if (t < n && s[t] > best) best = s[t];
  }
  if (page < a.pages) a.score[(h * a.qbs + qb) * a.pages + page] = best;
}

}  // namespace

void quest_page_scores(const QuestBoundLaunch& a) {
  if (a.d > kMaxDim) throw std::invalid_argument("Quest scores: head_dim " + std::to_string(a.d) + " above " + std::to_string(kMaxDim));
  if (a.hkv <= 0 || a.hq % a.hkv != 0) throw std::invalid_argument("Quest scores: query heads must be a multiple of KV heads");
  if (a.page_size < 1 || a.b_sq < 1 || a.b_q < 1) throw std::invalid_argument("Quest scores: page size, b_q and b_sq must be >= 1");
  if (a.pages == 0 || a.qbs == 0 || a.hq == 0) return;
  const int64_t tiles = (a.pages + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(tiles * a.qbs), static_cast<unsigned>(a.hq));
  cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  if (a.d <= kManyRowsDim) quest_scores_kernel<kManyRows, kManyRowsDim><<<grid, kThreads, 0, stream>>>(a);
  else quest_scores_kernel<kFewRows, kMaxDim><<<grid, kThreads, 0, stream>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("Quest scores kernel: ") + cudaGetErrorString(err));
}

}  // namespace hipstudio::gpu
