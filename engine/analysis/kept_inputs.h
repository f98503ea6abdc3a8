#pragma once
// The kept layers' inputs (PairedAnalysis::inputs) from the run's tensors: on a CPU run, float32
// host arrays at once (what the float64 reference reads); on a device, the run's tensors themselves
// in the run's dtype, copied to the host only when a view or a capture asks (LayerInputs::host).
#include <ATen/ATen.h>

#include "engine/analysis/paired_result.h"
#include "engine/analysis/layer_views_backend.h"

namespace hipstudio {

// Inputs held as tensors on the run's device. Keys and values are copied (they are views of the KV
// cache, which decode steps write past the prompt and which must not be kept alive); the queries are
// the layer's own tensor, which nothing writes after the attention call, so they are kept as they
// are (made contiguous) rather than copied a second time.
class TensorLayerInputs final : public LayerInputsSource {
 public:
  TensorLayerInputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);
  const at::Tensor& q() const { return q_; }  // (heads, tokens, dim)
  const at::Tensor& k() const { return k_; }  // (kv_heads, tokens, dim)
  const at::Tensor& v() const { return v_; }  // (kv_heads, tokens, dim)
  LayerInputArrays copy_to_host() const override;
  std::string location() const override;
  uint64_t bytes() const override;

 private:
  at::Tensor q_, k_, v_;
};

// A kept layer as one whole-prompt chunk for the views layer: its tensors where the run keeps them
// (TensorLayerInputs), else float32 tensors over the host arrays (which must outlive the chunk).
LayerViewsChunk kept_layer_chunk(const LayerInputs& in);

// q (heads, tokens, dim), k and v (kv_heads, tokens, dim), any dtype and device.
LayerInputs keep_layer_inputs(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

}  // namespace hipstudio
