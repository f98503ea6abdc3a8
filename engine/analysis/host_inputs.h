#pragma once
// float32, contiguous CPU copies of one layer's attention tensors (any device and dtype) and the
// kernels reference's view over them. Positions stay implicit: query i is at tk - tq + i.
#include <ATen/ATen.h>

#include "kernels/attention_inputs.h"

namespace hipstudio {

struct HostAttentionInputs {
  at::Tensor q, k, v;       // (hq, tq, d), (hkv, tk, d), (hkv, tk, d)
  hip::AttentionInputs view;

  HostAttentionInputs(const at::Tensor& q_any, const at::Tensor& k_any, const at::Tensor& v_any)
      : q(q_any.to(at::kCPU, at::kFloat).contiguous()),
        k(k_any.to(at::kCPU, at::kFloat).contiguous()),
        v(v_any.to(at::kCPU, at::kFloat).contiguous()) {
    view.q = q.data_ptr<float>();
    view.k = k.data_ptr<float>();
    view.v = v.data_ptr<float>();
    view.hq = q.size(0);
    view.tq = q.size(1);
    view.d = q.size(2);
    view.hkv = k.size(0);
    view.tk = k.size(1);
  }
};

}  // namespace hipstudio
