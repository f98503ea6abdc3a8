#include "kernels/cuda/top_in_ranges.h"

#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>
#include <stdexcept>
#include <string>

namespace hipstudio::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kBits = 8;  // radix digit: 256 bins
constexpr int kBins = 1 << kBits;

// Unsigned keys in the scores' order: the sign bit flipped for non-negative values, every bit for
// negative ones; -0.0 first made +0.0.
template <typename T>
struct OrderKey;
template <>
struct OrderKey<float> {
  using U = unsigned int;
  static __device__ U of(float f) {
    U u = __float_as_uint(f);
    if ((u << 1) == 0u) u = 0u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
};
template <>
struct OrderKey<double> {
  using U = unsigned long long;
  static __device__ U of(double f) {
    U u = static_cast<U>(__double_as_longlong(f));
    if ((u << 1) == 0ull) u = 0ull;
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
  }
};

template <typename T>
__global__ void __launch_bounds__(kThreads) top_in_ranges_kernel(const TopInRangesLaunch a) {
  using U = typename OrderKey<T>::U;
  constexpr int kDigits = static_cast<int>(sizeof(U)) * 8 / kBits;
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ unsigned int hist[kBins];
  __shared__ U picked_prefix;
  __shared__ long long picked_need;
  __shared__ long long ties_seen, written;

  const long long row = blockIdx.x;
  const T* s = static_cast<const T*>(a.scores) + row * a.n;
  int32_t* out = a.out + row * a.take;
  const long long lo = a.lo;
  long long hi = a.hi[row % a.ranges];
  if (hi > a.n) hi = a.n;
  const long long count = hi > lo ? hi - lo : 0;
  if (count <= a.take) {  // the whole range
    for (long long i = threadIdx.x; i < a.take; i += kThreads) out[i] = i < count ? static_cast<int32_t>(lo + i) : -1;
    return;
  }

  // The take-th largest key, a digit a pass from the top: `need` is its rank among the keys that
  // share the digits found so far; after the last digit, how many keys equal to it are taken.
  U prefix = 0, mask = 0;
  long long need = a.take;
  for (int digit = kDigits - 1; digit >= 0; --digit) {
    const int shift = digit * kBits;
    for (int i = threadIdx.x; i < kBins; i += kThreads) hist[i] = 0u;
    __syncthreads();
    for (long long j = lo + threadIdx.x; j < hi; j += kThreads) {
      const U key = OrderKey<T>::of(s[j]);
      if ((key & mask) == prefix) atomicAdd(&hist[static_cast<int>((key >> shift) & (kBins - 1))], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      long long above = 0;
      int b = kBins - 1;
      for (; b > 0; --b) {
        if (above + hist[b] >= need) break;
        above += hist[b];
      }
      picked_prefix = prefix | (static_cast<U>(b) << shift);
      picked_need = need - above;
    }
    __syncthreads();
    prefix = picked_prefix;
    need = picked_need;
    mask |= static_cast<U>(kBins - 1) << shift;
  }
  const U kth = prefix;

  // Column order: every key above kth, and the first `need` keys equal to it.
  if (threadIdx.x == 0) ties_seen = 0, written = 0;
  __syncthreads();
  for (long long base = lo; base < hi; base += kThreads) {
    const long long j = base + threadIdx.x;
    int above = 0, tie = 0;
    if (j < hi) {
      const U key = OrderKey<T>::of(s[j]);
      above = key > kth;
      tie = key == kth;
    }
    int tie_rank = 0, ties = 0;
    Scan(scan).ExclusiveSum(tie, tie_rank, ties);
    __syncthreads();  // the scan's storage is used again
    const int chosen = above || (tie && ties_seen + tie_rank < need);
    int slot = 0, chosen_here = 0;
    Scan(scan).ExclusiveSum(chosen, slot, chosen_here);
    if (chosen) out[written + slot] = static_cast<int32_t>(j);
    __syncthreads();
    if (threadIdx.x == 0) ties_seen += ties, written += chosen_here;
    __syncthreads();
    if (written >= a.take) return;  // exactly take are chosen
  }
  // Not reached: the select leaves exactly take keys at or above kth (kept for a partial list's tail).
  for (long long i = written + threadIdx.x; i < a.take; i += kThreads) out[i] = -1;
}

}  // namespace

void top_in_ranges(const TopInRangesLaunch& a) {
  if (a.take < 1) throw std::invalid_argument("top in ranges: take must be at least 1");
  if (a.n >= (int64_t{1} << 31)) throw std::invalid_argument("top in ranges: " + std::to_string(a.n) + " columns do not fit int32 lists");
  if (a.ranges < 1 || a.lo < 0) throw std::invalid_argument("top in ranges: needs at least one range and lo >= 0");
  if (a.rows == 0) return;
  if (a.rows >= (int64_t{1} << 31)) throw std::invalid_argument("top in ranges: too many rows for one launch");
  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  const unsigned grid = static_cast<unsigned>(a.rows);
  if (a.f64)
    top_in_ranges_kernel<double><<<grid, kThreads, 0, stream>>>(a);
  else
    top_in_ranges_kernel<float><<<grid, kThreads, 0, stream>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("top in ranges kernel: ") + cudaGetErrorString(err));
}

}  // namespace hipstudio::gpu
