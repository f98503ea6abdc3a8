#include "kernels/methods/torch/tensor_fixed_order.h"

#include <limits>

#include "kernels/methods/fixed_order_f64.h"
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include <c10/core/DeviceGuard.h>

#include "kernels/cuda/dot_f64_pairs.h"
#endif

namespace hipstudio::hip::methods {

at::Tensor exp_f64(const at::Tensor& x) {
  const at::Tensor ok = x.ge(kExpFloor);  // false for -infinity and NaN
  const at::Tensor xs = at::where(ok, x, at::zeros_like(x));
  const at::Tensor n = at::round(xs * kLog2e);  // ties to even, as nearbyint
  const at::Tensor r = (xs - n * kLn2Hi) - n * kLn2Lo;
  at::Tensor p = at::full_like(r, kExpCoef[kExpDegree]);
  for (int j = kExpDegree - 1; j >= 0; --j) p = p * r + kExpCoef[j];
  // 2^n from its bits: exponent field n + 1023, n in [-1021, 0].
  const at::Tensor pow2 = ((n.to(at::kLong) + 1023) * (int64_t{1} << 52)).view(at::kDouble);
  return at::where(ok, p * pow2, at::zeros_like(p));
}

at::Tensor tree_sum_last(const at::Tensor& x) {
  const int64_t n = x.size(-1);
  if (n == 0) return at::zeros(x.sizes().slice(0, x.dim() - 1), x.options());
  const int64_t m = tree_sum_padded_size(n);
  at::Tensor v = m > n ? at::constant_pad_nd(x, {0, m - n}, 0.0) : x;
  for (int64_t half = m / 2; half >= 1; half /= 2) v = v.narrow(-1, 0, half) + v.narrow(-1, half, half);
  return v.squeeze(-1);
}

at::Tensor dot_f64_pairs(const at::Tensor& rows, const at::Tensor& keys) {
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  if (rows.is_cuda() && keys.is_cuda() && rows.scalar_type() == at::kDouble && keys.scalar_type() == at::kDouble) {
    // One kernel with the lanes' sums in registers, where the ops below stream a (R, T) tensor
    // through memory twice per element of d: the same operations, so the same bits.
    const at::Tensor r = rows.contiguous(), k = keys.contiguous();
    at::Tensor out = at::empty({r.size(0), k.size(0)}, r.options());
    gpu::DotF64PairsLaunch l;
    l.rows = r.data_ptr<double>(), l.keys = k.data_ptr<double>(), l.out = out.data_ptr<double>();
    l.n_rows = r.size(0), l.n_keys = k.size(0), l.d = r.size(1);
    if (gpu::dot_f64_pairs_fits(l)) {
      const c10::DeviceGuard guard(r.device());  // the legacy default stream of the inputs' device
      gpu::dot_f64_pairs(l);
      return out;
    }
  }
#endif
  return dot_f64_pairs_by_tensor_ops(rows, keys);
}

at::Tensor dot_f64_pairs_by_tensor_ops(const at::Tensor& rows, const at::Tensor& keys) {
  const int64_t d = rows.size(1);
  auto lane = [&](int64_t l) {
    at::Tensor s = at::zeros({rows.size(0), keys.size(0)}, rows.options());
    for (int64_t e = l; e < d; e += 8) s = s + rows.narrow(1, e, 1) * keys.select(1, e).unsqueeze(0);
    return s;
  };
  // Built in the combination's order, so that at most four lanes are alive at once.
  at::Tensor left = lane(0) + lane(4);
  left = left + (lane(2) + lane(6));
  at::Tensor right = lane(1) + lane(5);
  right = right + (lane(3) + lane(7));
  return left + right;
}

}  // namespace hipstudio::hip::methods
