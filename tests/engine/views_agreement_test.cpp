// One views layer, one seeding rule: for every layer of a real paired run (stories15M), the random
// baseline and the recall tables are the same whether they come from the analysis (which computed
// them during the run), from the views layer's reference on the kept Q/K/V (what the GUI's Mask
// panel calls), or from a capture written to disk and read back. Before the views layer the GUI
// seeded with `seed` alone, so these differed for every layer >= 1.
#include <gtest/gtest.h>

#include "engine/analysis/layer_view.h"
#include "engine/views/reference_views.h"
#include "tests/engine/paired_capture_fixture.h"

namespace hipstudio {
namespace {

TEST(ViewsAgreement, AnalysisGuiAndCaptureShareTheRandomBaselineAndRecallOfEveryLayer) {
  auto model = testing::default_model();
  AnalysisOptions o = testing::paired_test_options(2);
  o.random_seed = 5;
  PairedAnalysis a = run_paired_analysis(model, testing::kStoryOpening, o);
  const int64_t layers = model->config.n_layers;
  ASSERT_EQ(a.masks.size(), static_cast<size_t>(layers));

  const testing::PairedCapture run = testing::capture_mask_views(std::move(a), "stories15M", "llama2.c", testing::kStoryOpening);
  const PairedAnalysis& kept = run.kept;
  const captures::Capture& back = run.back;
  ASSERT_EQ(back.view_layers.size(), static_cast<size_t>(layers));

  for (int64_t l = 0; l < layers; ++l) {
    const LayerMaskViews& from_run = *kept.find_masks(l);
    const LayerMaskViews gui = reference_layer_masks(layer_view(*kept.find_inputs(l)), o.hip.hip, kept.layers[l].math, o.random_seed, l);
    const LayerMaskViews& from_file = back.masks[static_cast<size_t>(back.view_index(l))];
    EXPECT_EQ(from_run.random.blocks, gui.random.blocks) << "layer " << l;
    EXPECT_EQ(from_file.random.blocks, gui.random.blocks) << "layer " << l;
    EXPECT_EQ(from_run.random_recall, gui.random_recall) << "layer " << l;
    EXPECT_EQ(from_file.random_recall, gui.random_recall) << "layer " << l;
    EXPECT_EQ(from_file.recall, gui.recall) << "layer " << l;
    // The per-head numbers of `analyze` are the means of these tables.
    const std::vector<double> heads = per_head_means(gui.random_recall, gui.hip);
    for (size_t h = 0; h < heads.size(); ++h) EXPECT_DOUBLE_EQ(kept.layers[l].heads[h].random_recall, heads[h]) << l << "/" << h;
    // The rule itself: layer l draws with seed + l (layer 0 and 1 would otherwise coincide).
    if (l > 0) {
      EXPECT_NE(gui.random.blocks, reference_layer_masks(layer_view(*kept.find_inputs(l)), o.hip.hip, kept.layers[l].math, o.random_seed, 0).random.blocks);
    }
  }
}

}  // namespace
}  // namespace hipstudio
