// The selection methods' tensor implementations (kernels/methods/torch/) against their CPU
// references, on the CPU: identical masks from float32 and float64 tensors, on random and
// tie-heavy inputs of the shared table, the same decode state and refreshes; the fixed-order
// tensor arithmetic against its scalar definition bit for bit. tests/gpu runs the same on CUDA.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/kernels/mask_expectations.h"
#include "kernels/dot_f64.h"
#include "kernels/methods/fixed_order_f64.h"
#include "kernels/methods/torch/tensor_fixed_order.h"
#include "kernels/methods/torch/tensor_selection.h"
#include "kernels/methods/vslash.h"
#include "tests/kernels/selection_method_cases.h"

namespace hipstudio::hip {
namespace {

methods::TensorInputs tensors_of(const testing::OwnedInputs& o, at::ScalarType dtype) {
  methods::TensorInputs t;
  t.q = at::from_blob(const_cast<float*>(o.q.data()), {o.hq, o.tq, o.d}, at::kFloat).to(dtype);
  t.k = at::from_blob(const_cast<float*>(o.k.data()), {o.hkv, o.tk, o.d}, at::kFloat).to(dtype);
  if (!o.positions.empty()) t.positions = at::tensor(o.positions, at::kLong);
  return t;
}

void expect_same(const MaskResult& want, const MaskResult& got, const std::string& what) {
  hipstudio::testing::expect_same_mask(got, want, what);
}

TEST(SelectionMethodsTorch, FixedOrderOpsGiveTheScalarBits) {
  const testing::OwnedInputs o = testing::random_inputs(1, 1, 5, 37, 13, 3);
  const at::Tensor q = at::from_blob(const_cast<float*>(o.q.data()), {5, 13}, at::kFloat).to(at::kDouble);
  const at::Tensor k = at::from_blob(const_cast<float*>(o.k.data()), {37, 13}, at::kFloat).to(at::kDouble);
  const at::Tensor dots = methods::dot_f64_pairs(q, k).contiguous();
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t t = 0; t < 37; ++t) ASSERT_EQ(dots[r][t].item<double>(), dot_f64(&o.q[r * 13], &o.k[t * 13], 13));
  std::vector<double> xs;
  for (double x = -720.0; x <= 0.0; x += 0.173) xs.push_back(x);
  xs.push_back(-INFINITY);
  const at::Tensor e = methods::exp_f64(at::tensor(xs, at::kDouble)).contiguous();
  for (size_t i = 0; i < xs.size(); ++i) ASSERT_EQ(e[i].item<double>(), methods::exp_f64(xs[i])) << xs[i];
  std::vector<double> v(37);
  for (size_t i = 0; i < v.size(); ++i) v[i] = o.k[i] * 1e-3 + 1.0 / (i + 1);
  const double want = [&] {
    std::vector<double> w(v);
    w.resize(64);
    return methods::tree_sum_in_place(w.data(), 37);
  }();
  EXPECT_EQ(methods::tree_sum_last(at::tensor(v, at::kDouble).view({1, 37})).item<double>(), want);
}

TEST(SelectionMethodsTorch, TensorPathsGiveTheReferenceMasks) {
  int compared = 0;
  for (const testing::SelectionShape& s : testing::selection_shapes()) {
    const HipParams p = testing::selection_params(s);
    for (bool ties : {false, true}) {
      const testing::OwnedInputs o = testing::selection_inputs(s, 61, ties);
      for (const methods::SelectionMethod* m : methods::selection_methods()) {
        if (!methods::find_tensor_selection(m->name)) continue;
        for (const methods::MethodValues& given : testing::selection_value_sets(m->name, p)) {
          const methods::SelectionContext ctx = testing::selection_context(m->name, p, given);
          const MaskResult want = methods::select_masks(*m, o.view(false), ctx);
          for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
            const std::string what = m->name + " " + s.name + (ties ? " ties " : " ") + at::toString(dtype);
            expect_same(want, methods::to_mask_result(methods::select_masks(*m, tensors_of(o, dtype), ctx)), what);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 100);
}

TEST(SelectionMethodsTorch, DecodeStateAndRefreshesMatchTheReference) {
  const testing::SelectionShape s{"decode", 4, 2, 150, 150, 16, 32, 8, 2, 1, 4, 4};
  const HipParams p = testing::selection_params(s);
  const testing::OwnedInputs prompt = testing::selection_inputs(s, 71);
  testing::OwnedInputs rows = testing::random_inputs(4, 2, 1, 171, 16, 72);
  rows.positions = {170};
  for (const methods::TensorSelection* t : methods::tensor_selections()) {
    const methods::SelectionMethod& m = methods::find_selection_method(t->name);
    const methods::SelectionContext ctx = testing::selection_context(m.name, p);
    const auto state = methods::decode_state(m, prompt.view(false), ctx);
    const auto tensor_state = methods::decode_state(m, tensors_of(prompt, at::kFloat), ctx);
    ASSERT_EQ(state != nullptr, tensor_state != nullptr) << m.name;
    if (state) {
      const auto& a = dynamic_cast<const methods::VslashState&>(*state);
      const auto& b = dynamic_cast<const methods::VslashState&>(*tensor_state);
      EXPECT_EQ(a.vertical, b.vertical);
      EXPECT_EQ(a.slash, b.slash);
    }
    expect_same(methods::select_for_decode(m, rows.view(false), ctx, state.get()),
                methods::to_mask_result(methods::select_for_decode(m, tensors_of(rows, at::kFloat), ctx,
                                                                   tensor_state.get())),
                m.name + " decode");
  }
}

TEST(SelectionMethodsTorch, EveryTensorPathIsARegistryEntryAndTheOracleHasNone) {
  for (const methods::TensorSelection* t : methods::tensor_selections()) {
    EXPECT_NO_THROW(methods::find_selection_method(t->name));
    const bool stateful = methods::find_selection_method(t->name).prompt_state != nullptr;
    EXPECT_EQ(t->prompt_state != nullptr, stateful) << t->name;
  }
  EXPECT_EQ(methods::find_tensor_selection("oracle"), nullptr);
  const testing::OwnedInputs o = testing::random_inputs(1, 1, 8, 8, 4, 1);
  HipParams p;
  p.k = 4, p.b_q = 4;
  try {
    methods::select_masks(methods::find_selection_method("oracle"), tensors_of(o, at::kFloat),
                          testing::selection_context("oracle", p));
    ADD_FAILURE() << "no error";
  } catch (const methods::MethodError& e) {
    EXPECT_NE(std::string(e.what()).find("only its CPU reference (with one: hip, random, streaming, quest, vslash)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hipstudio::hip
