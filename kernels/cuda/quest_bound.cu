#include "kernels/cuda/quest_bound.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace hipstudio::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxDim = 256;

// Block (query block x page tile, head): the block's sampled rows one after another into shared
// memory, each thread its page's bound of every row, the maximum kept.
__global__ void quest_scores_kernel(QuestBoundLaunch a) {
  __shared__ double row[kMaxDim];
  const int64_t tiles = (a.pages + kThreads - 1) / kThreads;
  const int64_t qb = blockIdx.x / tiles, page = (blockIdx.x % tiles) * kThreads + threadIdx.x;
  const int64_t h = blockIdx.y, kv = h / (a.hq / a.hkv);
  const double* mn = a.page_min + kv * a.d * a.pages;
  const double* mx = a.page_max + kv * a.d * a.pages;
  double best = __longlong_as_double(static_cast<long long>(0xfff0000000000000ULL));  // -inf
  for (int64_t i = qb * a.b_q; i < a.tq && i < (qb + 1) * a.b_q; i += a.b_sq) {
    __syncthreads();
    for (int64_t e = threadIdx.x; e < a.d; e += kThreads) row[e] = a.q[(h * a.tq + i) * a.d + e];
    __syncthreads();
    if (page >= a.pages) continue;
    double s = 0.0;
    for (int64_t e = 0; e < a.d; ++e) {
      const double lo = __dmul_rn(row[e], mn[e * a.pages + page]), hi = __dmul_rn(row[e], mx[e * a.pages + page]);
      s = __dadd_rn(s, lo < hi ? hi : lo);  // std::max(lo, hi): the first unless it is the smaller
    }
    if (s > best) best = s;
  }
  if (page < a.pages) a.score[(h * a.qbs + qb) * a.pages + page] = best;
}

}  // namespace

void quest_page_scores(const QuestBoundLaunch& a) {
  if (a.d > kMaxDim) throw std::invalid_argument("Quest scores: head_dim " + std::to_string(a.d) + " above " + std::to_string(kMaxDim));
  if (a.hkv <= 0 || a.hq % a.hkv != 0) throw std::invalid_argument("Quest scores: query heads must be a multiple of KV heads");
  if (a.pages == 0 || a.qbs == 0 || a.hq == 0) return;
  const int64_t tiles = (a.pages + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(tiles * a.qbs), static_cast<unsigned>(a.hq));
  quest_scores_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(a.stream)>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("Quest scores kernel: ") + cudaGetErrorString(err));
}

}  // namespace hipstudio::gpu
