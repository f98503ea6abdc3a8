#include "kernels/cuda/rope_cache.h"

#include "kernels/cuda/common.cuh"

namespace hipstudio::gpu {

namespace {

// One block a head (queries, then keys, then values), one thread an element: ~64 KB of traffic a
// step, so launch count, not layout, is what matters here.
template <class T>
__global__ void rope_cache_kernel(const T* qkv, const T* table, const int64_t* position, T* q, T* keys, T* values,
                                  int64_t keys_head_stride, int64_t keys_row_stride, int64_t values_head_stride,
                                  int64_t values_row_stride, int n_heads, int n_kv_heads, int head_dim) {
  const int head = blockIdx.x, i = threadIdx.x;
  // Launched as a dependent of the q/k/v projection (launch_after_prior): qkv is its output. The
  // kernel after this one (HiP's attention or mask search) may start its own set-up at once, while
  // the projection still runs: what it reads before its own wait was complete before the projection
  // started (AttentionLaunch::mask_before_prior_kernel, MaskLaunch::after_prior), and it waits for
  // this kernel, which ends after the projection, before it reads Q or the new key.
  let_next_grid_start();
  wait_for_prior_grid();
  const int64_t pos = *position;
  const T* x = qkv + static_cast<int64_t>(head) * head_dim;
  if (head >= n_heads + n_kv_heads) {  // a value head: copied as it is
    const int64_t h = head - n_heads - n_kv_heads;
    values[h * values_head_stride + pos * values_row_stride + i] = x[i];
    return;
  }
  const T* row = table + pos * 2 * head_dim;
  const int partner = i < head_dim / 2 ? i + head_dim / 2 : i - head_dim / 2;  // roll by head_dim / 2
  // rotate_rows: addcmul(x * cos, roll(x), sin), the product x * cos rounded to T first.
  const float a = to_f32(from_f32<T>(to_f32(x[i]) * to_f32(row[i])));
  const T out = from_f32<T>(a + to_f32(x[partner]) * to_f32(row[head_dim + i]));
  if (head < n_heads) {
    q[static_cast<int64_t>(head) * head_dim + i] = out;
  } else {
    keys[(head - n_heads) * keys_head_stride + pos * keys_row_stride + i] = out;
  }
}

template <class T>
void launch_typed(const RopeCacheLaunch& l) {
  const unsigned blocks = static_cast<unsigned>(l.n_heads + 2 * l.n_kv_heads);
  launch_after_prior(rope_cache_kernel<T>, dim3(blocks), dim3(static_cast<unsigned>(l.head_dim)), 0,
                     as_stream(l.stream), static_cast<const T*>(l.qkv), static_cast<const T*>(l.table), l.position,
                     static_cast<T*>(l.q), static_cast<T*>(l.keys), static_cast<T*>(l.values), l.keys_head_stride,
                     l.keys_row_stride, l.values_head_stride, l.values_row_stride, static_cast<int>(l.n_heads),
                     static_cast<int>(l.n_kv_heads), static_cast<int>(l.head_dim));
  HIP_CUDA_CHECK_LAUNCH("rope_cache_write");
}

}  // namespace

void rope_cache_write(const RopeCacheLaunch& l) {
  if (!l.qkv || !l.table || !l.position || !l.q || !l.keys || !l.values) throw_arg("rope_cache_write needs every pointer");
  if (l.n_heads < 1 || l.n_kv_heads < 1 || l.n_heads + 2 * l.n_kv_heads > INT32_MAX)
    throw_arg("rope_cache_write: bad head counts");
  if (l.head_dim < 2 || l.head_dim % 2 != 0 || l.head_dim > 1024) throw_arg("rope_cache_write: head_dim must be even, <= 1024");
  switch (l.dtype) {
    case ElementType::kF32: launch_typed<float>(l); break;
    case ElementType::kBF16: launch_typed<__nv_bfloat16>(l); break;
    case ElementType::kF16: launch_typed<__half>(l); break;
  }
}

}  // namespace hipstudio::gpu
