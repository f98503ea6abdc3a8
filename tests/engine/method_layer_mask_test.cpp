// A registry method's mask of one kept layer (engine/analysis/method_layer_mask.h) on the CPU: from
// host arrays it is the method's float64 reference (select_masks), and from kept tensors (the
// tensor implementation's path, here on CPU tensors) the same mask; recall equals a count of the
// oracle's blocks the mask holds, and the timing says it ran on no device.
#include <set>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "tests/kernels/mask_expectations.h"
#include "engine/analysis/kept_inputs.h"
#include "engine/analysis/method_layer_mask.h"
#include "kernels/methods/selection_method.h"
#include "kernels/methods/torch/tensor_selection.h"

namespace hipstudio {
namespace {

namespace hm = hip::methods;

hip::HipParams params() {
  hip::HipParams p;
  p.k = 32, p.b_q = 8, p.b_k = 4, p.sink = 4, p.window = 8;
  return p;
}

struct Layer {
  at::Tensor q, k, v;  // (4, 128, 16), (2, 128, 16) float32 on the CPU
  LayerInputs host, tensors;
};

Layer make_layer(int64_t layer) {
  at::manual_seed(11);
  Layer l;
  l.q = at::randn({4, 128, 16});
  l.k = at::randn({2, 128, 16});
  l.v = at::randn({2, 128, 16});
  l.host = keep_layer_inputs(layer, l.q, l.k, l.v);  // CPU tensors: host arrays
  l.tensors = l.host;
  l.tensors.set_source(std::make_shared<const TensorLayerInputs>(l.q, l.k, l.v));
  return l;
}

hip::AttentionInputs view(const Layer& l) {
  hip::AttentionInputs a;
  a.q = l.q.data_ptr<float>(), a.k = l.k.data_ptr<float>(), a.v = l.v.data_ptr<float>();
  a.hq = 4, a.hkv = 2, a.tq = 128, a.tk = 128, a.d = 16;
  return a;
}

hm::MethodChoice choice(const std::string& name) {
  return {name, hm::resolve_values(hm::find_selection_method(name), {}, params())};
}

using testing::expect_same_mask;

TEST(MethodLayerMask, EveryMethodGivesItsReferenceMaskFromHostArraysAndFromKeptTensors) {
  const int64_t layer = 3;
  const Layer l = make_layer(layer);
  for (const hm::SelectionMethod* m : hm::selection_methods()) {
    const hm::MethodChoice c = choice(m->name);
    const hip::MaskResult want = hm::select_masks(*m, view(l), hm::choice_context(c, params(), layer));
    const MethodLayerMask from_host = method_layer_mask(l.host, c, params(), nullptr);
    expect_same_mask(from_host.mask, want, m->name + " from host arrays");
    EXPECT_EQ(from_host.source, "float64 CPU reference");
    const MethodLayerMask from_tensors = method_layer_mask(l.tensors, c, params(), nullptr);
    expect_same_mask(from_tensors.mask, want, m->name + " from kept tensors");
    EXPECT_FALSE(from_host.on_device || from_tensors.on_device) << "CPU inputs are no device timing";
    EXPECT_EQ(from_tensors.source == "float64 CPU reference", hm::find_tensor_selection(m->name) == nullptr) << m->name;
    EXPECT_TRUE(from_host.recall.empty()) << "no oracle given, no recall";
    EXPECT_EQ(from_host.layer, layer);
    EXPECT_EQ(from_host.method.name, m->name);
  }
}

TEST(MethodLayerMask, RecallCountsTheOraclesBlocksTheMaskHolds) {
  const Layer l = make_layer(1);
  const hm::MethodChoice oracle_choice = choice("oracle");
  const hip::MaskResult oracle =
      hm::select_masks(hm::find_selection_method("oracle"), view(l), hm::choice_context(oracle_choice, params(), 1));
  for (const char* name : {"streaming", "quest", "random", "oracle"}) {
    const MethodLayerMask got = method_layer_mask(l.host, choice(name), params(), &oracle);
    ASSERT_EQ(got.recall.size(), static_cast<size_t>(oracle.heads * oracle.query_blocks)) << name;
    double sum = 0;
    for (int64_t h = 0; h < oracle.heads; ++h)
      for (int64_t qb = 0; qb < oracle.query_blocks; ++qb) {
        const std::set<int32_t> picked(got.mask.row(h, qb), got.mask.row(h, qb) + got.mask.count(h, qb));
        int64_t found = 0;
        const int32_t n = oracle.count(h, qb);
        for (int32_t i = 0; i < n; ++i) found += picked.count(oracle.row(h, qb)[i]);
        const double want = n == 0 ? 1.0 : static_cast<double>(found) / n;
        EXPECT_DOUBLE_EQ(got.recall[static_cast<size_t>(oracle.index(h, qb))], want) << name << " h " << h << " qb " << qb;
        sum += want;
      }
    if (std::string(name) == "oracle") {
      EXPECT_DOUBLE_EQ(sum, static_cast<double>(oracle.heads * oracle.query_blocks));
    }
  }
}

TEST(MethodLayerMask, RefusesAnUnknownMethodOrUnresolvedValues) {
  const Layer l = make_layer(0);
  EXPECT_THROW(method_layer_mask(l.host, {"h2o", {}}, params(), nullptr), hm::MethodError);
  EXPECT_THROW(method_layer_mask(l.host, {"quest", {}}, params(), nullptr), hm::MethodError);  // values not resolved
}

}  // namespace
}  // namespace hipstudio
