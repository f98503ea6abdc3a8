// The layer-streamed paired prefill on CUDA (label: gpu): both sides stopped after the viewed layer
// and resumed (after a cancel in the dense side's resumed half) must give what an unsplit CUDA run
// gives: the same masks and tokens, the same metrics up to the device's run-to-run rounding. The CPU
// suite (tests/engine/streamed_prefill_test.cpp) checks bit-identity on the reference path.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "engine/analysis/paired_analysis.h"
#include "engine/formats/model_source.h"
#include "engine/model/model.h"
#include "engine/runtime/device.h"
#include "engine/runtime/run_cancelled.h"
#include "tests/engine/hip_test_setup.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

TEST(StreamedPrefillCuda, ResumedBothSidesEqualAnUnsplitCudaRun) {
  REQUIRE_CUDA_KERNELS();
  for (const char* dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    auto model = load_model(resolve_model_source(""), parse_run_device("cuda", dtype));
    AnalysisOptions o;
    o.hip = testing::small_hip_params();
    o.decode_steps = 4;
    o.views_only_layer = 2;
    o.viewed_layer_first = true;
    auto prefill = PairedPrefill::run(model, testing::kStory, o, 4);
    ASSERT_TRUE(prefill->hip_pending());
    EXPECT_THROW(prefill->finish_hip([](double, const std::string& w) { return w != "dense prefill, layer 4"; }), RunCancelled);
    prefill->finish_hip();
    PairedAnalysis got = prefill->decode(4, o.hip.refresh_every);
    for (LayerQuality& q : got.layers)
      if (q.pending) {
        LayerViewsResult r = prefill->layer_views(q.layer);
        q = r.quality;
        got.masks.push_back(r.masks);
      }
    AnalysisOptions whole_options = o;
    whole_options.views_only_layer = -1;
    whole_options.viewed_layer_first = false;
    const PairedAnalysis whole = run_paired_analysis(model, testing::kStory, whole_options);
    EXPECT_EQ(got.dense.generated, whole.dense.generated);
    EXPECT_EQ(got.hip.generated, whole.hip.generated);
    EXPECT_EQ(got.access.mask_keys, whole.access.mask_keys);
    ASSERT_EQ(got.masks.size(), whole.masks.size());
    for (const LayerMaskViews& m : got.masks) {
      const LayerMaskViews* w = whole.find_masks(m.layer);
      ASSERT_NE(w, nullptr) << m.layer;
      EXPECT_EQ(m.hip.blocks, w->hip.blocks) << "layer " << m.layer;
    }
    double metric = 0;
    for (size_t l = 0; l < whole.layers.size(); ++l)
      for (size_t h = 0; h < whole.layers[l].heads.size(); ++h)
        metric = std::max(metric, std::abs(got.layers[l].heads[h].recall - whole.layers[l].heads[h].recall));
    const double nll = std::max(max_diff(got.dense.nll, whole.dense.nll), max_diff(got.hip.nll, whole.hip.nll));
    std::printf("[gpu] streamed vs unsplit CUDA prefill (%s): max nll diff %.3g, max recall diff %.3g, KL %.6g vs %.6g\n", dtype,
                nll, metric, got.kl, whole.kl);
    EXPECT_LE(nll, 1e-4);
    EXPECT_LE(metric, 1e-9);
    EXPECT_NEAR(got.kl, whole.kl, 1e-5);
  }
}

}  // namespace
}  // namespace hipstudio
