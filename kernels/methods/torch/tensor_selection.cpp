#include "kernels/methods/torch/tensor_selection.h"

#include "kernels/methods/torch/tensor_method_mask.h"

namespace hipstudio::hip::methods {

// The tensor implementations: one line per method that has one (its file defines
// <name>_tensor_select and, for a method with prompt state, <name>_tensor_state).
#define HIPSTUDIO_TENSOR_SELECTIONS(X, S) \
  X(hip)                                  \
  X(random)                               \
  X(streaming)                            \
  X(quest)                                \
  S(vslash)

#define HIPSTUDIO_DECLARE_SELECT(name) \
  MethodMaskTensors name##_tensor_select(const TensorInputs&, const SelectionContext&, const MethodState*);
#define HIPSTUDIO_DECLARE_STATEFUL(name) \
  HIPSTUDIO_DECLARE_SELECT(name)         \
  std::shared_ptr<const MethodState> name##_tensor_state(const TensorInputs&, const SelectionContext&);
HIPSTUDIO_TENSOR_SELECTIONS(HIPSTUDIO_DECLARE_SELECT, HIPSTUDIO_DECLARE_STATEFUL)
#undef HIPSTUDIO_DECLARE_SELECT
#undef HIPSTUDIO_DECLARE_STATEFUL

const std::vector<const TensorSelection*>& tensor_selections() {
#define HIPSTUDIO_LIST_SELECT(name) TensorSelection{#name, name##_tensor_select, nullptr},
#define HIPSTUDIO_LIST_STATEFUL(name) TensorSelection{#name, name##_tensor_select, name##_tensor_state},
  static const std::vector<TensorSelection> entries = {
      HIPSTUDIO_TENSOR_SELECTIONS(HIPSTUDIO_LIST_SELECT, HIPSTUDIO_LIST_STATEFUL)};
#undef HIPSTUDIO_LIST_SELECT
#undef HIPSTUDIO_LIST_STATEFUL
  static const std::vector<const TensorSelection*> list = [] {
    std::vector<const TensorSelection*> out;
    for (const TensorSelection& e : entries) out.push_back(&e);
    return out;
  }();
  return list;
}

const TensorSelection* find_tensor_selection(const std::string& name) {
  for (const TensorSelection* t : tensor_selections())
    if (t->name == name) return t;
  return nullptr;
}

namespace {

const TensorSelection& tensor_entry(const SelectionMethod& method) {
  const TensorSelection* t = find_tensor_selection(method.name);
  if (!t) {
    std::string with;
    for (const TensorSelection* e : tensor_selections()) with += (with.empty() ? "" : ", ") + e->name;
    throw MethodError("method " + method.name + " has no tensor implementation, only its CPU reference (with one: " +
                      with + ")");
  }
  return *t;
}

}  // namespace

MethodMaskTensors select_masks(const SelectionMethod& method, const TensorInputs& in, const SelectionContext& ctx) {
  const TensorSelection& t = tensor_entry(method);
  validate_selection(method, ctx);
  check_tensor_inputs(in);
  const std::shared_ptr<const MethodState> state = t.prompt_state ? t.prompt_state(in, ctx) : nullptr;
  return t.select(in, ctx, state.get());
}

std::shared_ptr<const MethodState> decode_state(const SelectionMethod& method, const TensorInputs& prompt,
                                                const SelectionContext& ctx) {
  const TensorSelection& t = tensor_entry(method);
  validate_selection(method, ctx);
  check_tensor_inputs(prompt);
  return t.prompt_state ? t.prompt_state(prompt, ctx) : nullptr;
}

MethodMaskTensors select_for_decode(const SelectionMethod& method, const TensorInputs& rows,
                                    const SelectionContext& ctx, const MethodState* state) {
  const TensorSelection& t = tensor_entry(method);
  validate_selection(method, ctx);
  check_tensor_inputs(rows);
  if (t.prompt_state && !state)
    throw MethodError("method " + method.name + " re-selects from the prompt's state: pass decode_state(prompt)");
  return t.select(rows, ctx, state);
}

MaskResult to_mask_result(const MethodMaskTensors& m) {
  MaskResult r;
  const at::Tensor blocks = m.blocks.to(at::kCPU).contiguous(), counts = m.counts.to(at::kCPU).contiguous();
  const at::Tensor dense = m.dense_from.to(at::kCPU).contiguous();
  r.heads = blocks.size(0), r.query_blocks = blocks.size(1), r.kb = blocks.size(2);
  r.blocks.assign(blocks.data_ptr<int32_t>(), blocks.data_ptr<int32_t>() + blocks.numel());
  r.counts.assign(counts.data_ptr<int32_t>(), counts.data_ptr<int32_t>() + counts.numel());
  r.dense_from.assign(dense.data_ptr<int64_t>(), dense.data_ptr<int64_t>() + dense.numel());
  r.iterations.assign(r.counts.size(), 0);
  r.branches.assign(r.counts.size(), 0);
  return r;
}

}  // namespace hipstudio::hip::methods
