// The sparse side of another selection method on CUDA (label: gpu): its masks come from the
// method's tensor implementation and run through the CUDA sparse attention, prefill and decode
// refreshes alike. Checked against the CPU float64 reference path (logits) and against the
// method's CPU reference called on the run's own kept inputs (masks identical in fp32).
#include <cstdio>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/analysis/layer_view.h"
#include "engine/analysis/method_comparison.h"
#include "engine/backends/hip_attention.h"
#include "engine/formats/model_source.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "tests/engine/hip_test_setup.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

namespace hm = hip::methods;
const std::string& kStory = testing::kStoryOpening;

std::shared_ptr<const Model> load(const char* device) {
  return load_model(resolve_model_source(""), parse_run_device(device, "f32"));
}

hm::MethodChoice choice(const std::string& name, hm::MethodValues given = {}) {
  return {name, hm::resolve_values(hm::find_selection_method(name), given, testing::small_hip_params().hip)};
}

const std::vector<hm::MethodChoice>& methods() {
  static const std::vector<hm::MethodChoice> m = {choice("streaming"), choice("quest", {{"quest_page", 4}}),
                                                  choice("vslash"), choice("random", {{"random_seed", 3}})};
  return m;
}

// Prefill, then 12 decode steps (r_m 4: refreshes and cached steps) with the same tokens.
at::Tensor side_logits(std::shared_ptr<const Model> model, const hm::MethodChoice& method, const std::vector<int32_t>& ids,
                       size_t prefill, std::string* note) {
  HipModelParams p = testing::small_hip_params();
  p.method = method;
  HipAttention side(p, model->config.n_layers);
  Transformer transformer(model, static_cast<int64_t>(ids.size()));
  KVCache cache(model->config, model->run, static_cast<int64_t>(ids.size()));
  std::vector<at::Tensor> rows{transformer.forward({ids.begin(), ids.begin() + prefill}, cache, side, LogitsFor::AllTokens)};
  for (size_t i = prefill; i < ids.size(); ++i)
    rows.push_back(transformer.forward({ids[i]}, cache, side, LogitsFor::LastToken, Phase::Decode));
  *note = side.backend_note();
  return at::cat(rows, 0).to(at::kCPU);
}

TEST(MethodSidesCuda, Fp32PrefillAndDecodeMatchTheCpuReference) {
  REQUIRE_CUDA_KERNELS();
  auto cpu = load("cpu");
  auto gpu = load("cuda");
  const auto ids = cpu->tokenizer->encode(kStory, true);
  for (const hm::MethodChoice& m : methods()) {
    std::string cpu_note, gpu_note;
    const at::Tensor a = side_logits(cpu, m, ids, ids.size() - 12, &cpu_note);
    const at::Tensor b = side_logits(gpu, m, ids, ids.size() - 12, &gpu_note);
    EXPECT_EQ(gpu_note, "HiP CUDA kernels") << m.name;
    const double diff = (a - b).abs().max().item<double>();
    std::printf("[gpu] %s side, stories15M fp32 logits (prefill %zu + 12 decode steps, r_m 4), CUDA vs CPU reference: "
                "max abs diff %.3g\n", m.name.c_str(), ids.size() - 12, diff);
    EXPECT_LE(diff, 1e-3) << m.name;
  }
}

TEST(MethodSidesCuda, MasksEqualTheMethodsCpuReferenceOnTheRunsInputs) {
  REQUIRE_CUDA_KERNELS();
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  const std::vector<MethodRun> runs = run_method_comparison(load("cuda"), kStory, o, methods());
  for (const MethodRun& r : runs) {
    ASSERT_FALSE(r.analysis.masks.empty()) << r.method.name;
    for (const LayerMaskViews& m : r.analysis.masks) {
      if (m.layer < o.hip.dense_layers) continue;
      const hip::MaskResult want = hm::select_masks(hm::find_selection_method(r.method.name),
                                                    layer_view(*r.analysis.find_inputs(m.layer)),
                                                    hm::choice_context(r.method, o.hip.hip, m.layer));
      EXPECT_EQ(m.hip.blocks, want.blocks) << r.method.name << " layer " << m.layer;
      EXPECT_EQ(m.hip.counts, want.counts) << r.method.name << " layer " << m.layer;
    }
  }
}

}  // namespace
}  // namespace hipstudio
