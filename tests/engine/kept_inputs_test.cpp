// The kept layers' inputs: host arrays on a CPU run, the run's tensors elsewhere, copied to the host
// once, on first use, and shared by every copy of the value.
#include <atomic>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/analysis/kept_inputs.h"

namespace hipstudio {
namespace {

std::vector<float> floats(const at::Tensor& t) {
  const at::Tensor f = t.to(at::kFloat).contiguous();
  return {f.data_ptr<float>(), f.data_ptr<float>() + f.numel()};
}

TEST(KeptInputs, ACpuRunKeepsHostFloatArrays) {
  const at::Tensor q = at::randn({4, 10, 8}), k = at::randn({2, 10, 8}), v = at::randn({2, 10, 8});
  const LayerInputs in = keep_layer_inputs(3, q, k, v);
  EXPECT_EQ(in.source(), nullptr);
  EXPECT_EQ(in.layer, 3);
  EXPECT_EQ(in.heads, 4);
  EXPECT_EQ(in.kv_heads, 2);
  EXPECT_EQ(in.tokens, 10);
  EXPECT_EQ(in.dim, 8);
  EXPECT_EQ(in.host().q, floats(q));
  EXPECT_EQ(in.host().k, floats(k));
  EXPECT_EQ(in.host().v, floats(v));
}

// The tensor source keeps its own contiguous copies of the keys and values in the tensors' dtype: a
// later write to the run's KV cache (decode steps) does not reach them.
TEST(KeptInputs, TheTensorSourceOwnsItsCopiesInTheRunDtype) {
  const at::Tensor cache = at::randn({2, 16, 8}).to(at::kBFloat16);
  const at::Tensor k = cache.narrow(1, 0, 10), v = cache.narrow(1, 0, 10);  // non-contiguous views
  const at::Tensor q = at::randn({4, 10, 8}).to(at::kBFloat16);
  const std::vector<float> k_before = floats(k);
  const TensorLayerInputs source(q, k, v);
  cache.zero_();
  EXPECT_EQ(source.k().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(source.k().is_contiguous());
  EXPECT_EQ(source.bytes(), static_cast<uint64_t>((4 + 2 + 2) * 10 * 8 * 2));
  EXPECT_EQ(source.location(), "cpu BFloat16");
  const LayerInputArrays host = source.copy_to_host();
  EXPECT_EQ(host.k, k_before);
  EXPECT_EQ(host.q, floats(q));
}

class CountingSource final : public LayerInputsSource {
 public:
  explicit CountingSource(std::atomic<int>* copies) : copies_(copies) {}
  LayerInputArrays copy_to_host() const override {
    ++*copies_;
    return {{1, 2}, {3}, {4}};
  }
  std::string location() const override { return "test"; }
  uint64_t bytes() const override { return 0; }

 private:
  std::atomic<int>* copies_;
};

TEST(KeptInputs, TheHostCopyIsMadeOnceAndSharedByCopies) {
  std::atomic<int> copies{0};
  LayerInputs a;
  a.set_source(std::make_shared<CountingSource>(&copies));
  const LayerInputs b = a;  // as a decode re-run copies the prompt's results
  EXPECT_EQ(copies.load(), 0) << "nothing is copied before a view asks";
  EXPECT_EQ(b.host().q, (std::vector<float>{1, 2}));
  EXPECT_EQ(a.host().k, (std::vector<float>{3}));
  EXPECT_EQ(&a.host(), &b.host());
  EXPECT_EQ(copies.load(), 1);

  // Replacing one value's inputs leaves the other's alone.
  LayerInputs c = a;
  c.set_host({{9}, {9}, {9}});
  EXPECT_EQ(c.host().q, std::vector<float>{9});
  EXPECT_EQ(a.host().q, (std::vector<float>{1, 2}));
  EXPECT_EQ(c.source(), nullptr);
  EXPECT_NE(a.source(), nullptr);
}

}  // namespace
}  // namespace hipstudio
