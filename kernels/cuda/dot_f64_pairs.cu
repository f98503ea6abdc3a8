#include "kernels/cuda/dot_f64_pairs.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace hipstudio::gpu {
namespace {

constexpr int kThreads = 128;  // keys of a block, one a thread
constexpr int kRows = 8;       // rows a thread sums at once (8 lanes each, in registers)
constexpr int kMaxDim = 512;

// Block (key tile, row group): the group's kRows rows in shared memory; each thread walks its key
// over d once, eight elements (one per lane) a step, adding each product into its lane's sum for
// every row, so each lane still sums d = l, l + 8, ... in ascending order.
__global__ void dot_f64_pairs_kernel(const DotF64PairsLaunch a) {
  __shared__ double rows[kRows][kMaxDim];
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int n = static_cast<int>(a.n_rows - r0 < kRows ? a.n_rows - r0 : kRows);
  for (int64_t e = threadIdx.x; e < n * a.d; e += kThreads) rows[e / a.d][e % a.d] = a.rows[(r0 + e / a.d) * a.d + e % a.d];
  __syncthreads();
  if (t >= a.n_keys) return;
  const double* key = a.keys + t * a.d;
  double s[kRows][8];
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int l = 0; l < 8; ++l) s[r][l] = 0.0;
  for (int64_t e0 = 0; e0 < a.d; e0 += 8) {
    double k[8];
#pragma unroll
    for (int l = 0; l < 8; ++l) k[l] = e0 + l < a.d ? key[e0 + l] : 0.0;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= n) break;
#pragma unroll
      for (int l = 0; l < 8; ++l)
        if (e0 + l < a.d) s[r][l] = __dadd_rn(s[r][l], __dmul_rn(rows[r][e0 + l], k[l]));
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r >= n) break;
    const double left = __dadd_rn(__dadd_rn(s[r][0], s[r][4]), __dadd_rn(s[r][2], s[r][6]));
    const double right = __dadd_rn(__dadd_rn(s[r][1], s[r][5]), __dadd_rn(s[r][3], s[r][7]));
    a.out[(r0 + r) * a.n_keys + t] = __dadd_rn(left, right);
  }
}

}  // namespace

bool dot_f64_pairs_fits(const DotF64PairsLaunch& a) { return a.d >= 1 && a.d <= kMaxDim; }

void dot_f64_pairs(const DotF64PairsLaunch& a) {
  if (!dot_f64_pairs_fits(a)) throw std::invalid_argument("dot_f64 pairs: head_dim " + std::to_string(a.d) + " outside 1.." + std::to_string(kMaxDim));
  if (a.n_rows == 0 || a.n_keys == 0) return;
  const int64_t key_tiles = (a.n_keys + kThreads - 1) / kThreads, row_groups = (a.n_rows + kRows - 1) / kRows;
  if (key_tiles >= (int64_t{1} << 31) || row_groups >= 65536) throw std::invalid_argument("dot_f64 pairs: too many tiles for one launch");
  const dim3 grid(static_cast<unsigned>(key_tiles), static_cast<unsigned>(row_groups));
  dot_f64_pairs_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(a.stream)>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("dot_f64 pairs kernel: ") + cudaGetErrorString(err));
}

}  // namespace hipstudio::gpu
