// The selection methods' tensor implementations on CUDA (label gpu): float32 inputs on the GPU
// must give the CPU reference's masks exactly (scores from the same float64 operations in the same
// order, ties by a stable sort), on the shared table of cases (random and tie-heavy), a larger
// 8-head GQA case, and decode refreshes from the prompt's state. HiP's entry runs the CUDA mask
// kernels and is skipped where they were not built.
#include <gtest/gtest.h>

#include "engine/runtime/device.h"
#include "kernels/methods/torch/tensor_selection.h"
#include "kernels/methods/vslash.h"
#include "kernels/torch/hip_torch.h"
#include "tests/kernels/selection_method_cases.h"

namespace hipstudio::hip {
namespace {

#define REQUIRE_CUDA_GPU() \
  if (!::hipstudio::cuda_available()) GTEST_SKIP() << "no CUDA GPU; run the gpu-labelled tests on a GPU machine"

methods::TensorInputs cuda_tensors(const testing::OwnedInputs& o) {
  const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
  methods::TensorInputs t;
  t.q = at::from_blob(const_cast<float*>(o.q.data()), {o.hq, o.tq, o.d}, at::kFloat).to(cuda.device());
  t.k = at::from_blob(const_cast<float*>(o.k.data()), {o.hkv, o.tk, o.d}, at::kFloat).to(cuda.device());
  if (!o.positions.empty()) t.positions = at::tensor(o.positions, at::kLong).to(cuda.device());
  return t;
}

bool runs_here(const std::string& method) {
  return method != "hip" || hip_torch::cuda_kernels_status().empty();
}

void expect_same(const MaskResult& want, const methods::MethodMaskTensors& got_tensors, const std::string& what) {
  EXPECT_TRUE(got_tensors.blocks.is_cuda()) << what;
  const MaskResult got = methods::to_mask_result(got_tensors);
  EXPECT_EQ(got.blocks, want.blocks) << what;
  EXPECT_EQ(got.counts, want.counts) << what;
  EXPECT_EQ(got.dense_from, want.dense_from) << what;
}

TEST(SelectionMethodsCuda, TensorPathsGiveTheReferenceMasksInFloat32) {
  REQUIRE_CUDA_GPU();
  std::vector<testing::SelectionShape> shapes = testing::selection_shapes();
  shapes.push_back({"gqa_4096", 8, 2, 4096, 4096, 128, 256, 32, 2, 1, 16, 64});
  for (const testing::SelectionShape& s : shapes) {
    const HipParams p = testing::selection_params(s);
    for (bool ties : {false, true}) {
      const testing::OwnedInputs o = testing::selection_inputs(s, 81, ties);
      const methods::TensorInputs t = cuda_tensors(o);
      for (const methods::TensorSelection* entry : methods::tensor_selections()) {
        if (!runs_here(entry->name)) continue;
        const methods::SelectionMethod& m = methods::find_selection_method(entry->name);
        for (const methods::MethodValues& given : testing::selection_value_sets(m.name, p)) {
          const methods::SelectionContext ctx = testing::selection_context(m.name, p, given);
          expect_same(methods::select_masks(m, o.view(false), ctx), methods::select_masks(m, t, ctx),
                      m.name + " " + s.name + (ties ? " ties" : ""));
        }
      }
    }
  }
}

TEST(SelectionMethodsCuda, DecodeRefreshesMatchTheReference) {
  REQUIRE_CUDA_GPU();
  const testing::SelectionShape s{"decode", 8, 2, 2048, 2048, 128, 256, 32, 2, 1, 16, 64};
  const HipParams p = testing::selection_params(s);
  const testing::OwnedInputs prompt = testing::selection_inputs(s, 91);
  testing::OwnedInputs rows = testing::random_inputs(8, 2, 1, 2100, 128, 92);
  rows.positions = {2099};
  for (const methods::TensorSelection* entry : methods::tensor_selections()) {
    if (!runs_here(entry->name)) continue;
    const methods::SelectionMethod& m = methods::find_selection_method(entry->name);
    const methods::SelectionContext ctx = testing::selection_context(m.name, p);
    const auto state = methods::decode_state(m, prompt.view(false), ctx);
    const auto device_state = methods::decode_state(m, cuda_tensors(prompt), ctx);
    if (state) {
      const auto& a = dynamic_cast<const methods::VslashState&>(*state);
      const auto& b = dynamic_cast<const methods::VslashState&>(*device_state);
      EXPECT_EQ(a.vertical, b.vertical);
      EXPECT_EQ(a.slash, b.slash);
    }
    expect_same(methods::select_for_decode(m, rows.view(false), ctx, state.get()),
                methods::select_for_decode(m, cuda_tensors(rows), ctx, device_state.get()), m.name + " decode");
  }
}

}  // namespace
}  // namespace hipstudio::hip
