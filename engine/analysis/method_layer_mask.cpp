#include "engine/analysis/method_layer_mask.h"

#include <chrono>

#include "engine/analysis/kept_inputs.h"
#include "kernels/methods/torch/tensor_selection.h"
#include "kernels/oracle.h"

namespace hipstudio {

namespace hm = hip::methods;

MethodLayerMask method_layer_mask(const LayerInputs& in, const hm::MethodChoice& choice, const hip::HipParams& p,
                                  const hip::MaskResult* oracle, int threads) {
  const hm::SelectionMethod& method = hm::find_selection_method(choice.name);
  hm::validate_choice(choice, p);
  const hm::SelectionContext ctx = hm::choice_context(choice, p, in.layer, threads);
  MethodLayerMask out;
  out.method = choice;
  out.layer = in.layer;
  out.params = p;
  const auto start = std::chrono::steady_clock::now();
  const auto* tensors = dynamic_cast<const TensorLayerInputs*>(in.source());
  if (tensors && hm::find_tensor_selection(method.name)) {
    // The prompt's rows: positions implicit (query i at key i).
    const hm::TensorInputs t{tensors->q(), tensors->k(), at::Tensor()};
    out.mask = hm::to_mask_result(hm::select_masks(method, t, ctx));  // the host copy synchronises the device
    out.on_device = !tensors->q().device().is_cpu();
    out.source = "tensor implementation on " + tensors->q().device().str();
  } else {
    const LayerInputArrays& h = in.host();
    hip::AttentionInputs a;
    a.q = h.q.data(), a.k = h.k.data(), a.v = h.v.empty() ? nullptr : h.v.data();
    a.hq = in.heads, a.hkv = in.kv_heads, a.tq = in.tokens, a.tk = in.tokens, a.d = in.dim;
    out.mask = hm::select_masks(method, a, ctx);
    out.source = "float64 CPU reference";
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (oracle) out.recall = hip::mask_recall(out.mask, *oracle);
  return out;
}

}  // namespace hipstudio
