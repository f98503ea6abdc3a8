#include "engine/analysis/kept_inputs.h"

#include <stdexcept>

namespace hipstudio {
namespace {

std::vector<float> host_floats(const at::Tensor& t) {
  const at::Tensor f = t.to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
}

}  // namespace

TensorLayerInputs::TensorLayerInputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v)
    : q_(q.contiguous()), k_(k.clone(at::MemoryFormat::Contiguous)), v_(v.clone(at::MemoryFormat::Contiguous)) {}

LayerInputArrays TensorLayerInputs::copy_to_host() const { return {host_floats(q_), host_floats(k_), host_floats(v_)}; }

std::string TensorLayerInputs::location() const {
  return q_.device().str() + " " + std::string(c10::toString(q_.scalar_type()));
}

uint64_t TensorLayerInputs::bytes() const {
  return static_cast<uint64_t>(q_.nbytes() + k_.nbytes() + v_.nbytes());
}

LayerViewsChunk kept_layer_chunk(const LayerInputs& in) {
  LayerViewsChunk chunk;
  if (const auto* t = dynamic_cast<const TensorLayerInputs*>(in.source())) {
    chunk.q = t->q();
    chunk.k = t->k();
    chunk.v = t->v();
    return chunk;
  }
  // The views only read their inputs: the host arrays are wrapped, not copied.
  const LayerInputArrays& h = in.host();
  auto wrap = [](const std::vector<float>& a, int64_t heads, int64_t tokens, int64_t dim) {
    return at::from_blob(const_cast<float*>(a.data()), {heads, tokens, dim}, at::kFloat);
  };
  chunk.q = wrap(h.q, in.heads, in.tokens, in.dim);
  chunk.k = wrap(h.k, in.kv_heads, in.tokens, in.dim);
  chunk.v = wrap(h.v, in.kv_heads, in.tokens, in.dim);
  return chunk;
}

LayerInputs keep_layer_inputs(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  if (q.dim() != 3 || k.dim() != 3 || v.dim() != 3 || k.sizes() != v.sizes() || q.size(1) != k.size(1) || q.size(2) != k.size(2))
    throw std::logic_error("keep_layer_inputs: q (heads, tokens, dim), k and v (kv_heads, tokens, dim) expected");
  LayerInputs in;
  in.layer = layer;
  in.heads = q.size(0);
  in.kv_heads = k.size(0);
  in.tokens = q.size(1);
  in.dim = q.size(2);
  if (q.device().is_cpu())
    in.set_host({host_floats(q), host_floats(k), host_floats(v)});
  else
    in.set_source(std::make_shared<const TensorLayerInputs>(q, k, v));
  return in;
}

}  // namespace hipstudio
