// On-demand views over a paired analysis' captured Q/K: the mask HiP would pick for a layer equals
// the one the analysis' quality numbers came from, and locality statistics run on real scores.
#include <gtest/gtest.h>

#include "engine/analysis/layer_view.h"
#include "engine/analysis/paired_analysis.h"
#include "kernels/mask_reference.h"
#include "kernels/oracle.h"
#include "kernels/attention_metrics.h"
#include "kernels/score_locality.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

TEST(LayerView, RecomputedRecallMatchesTheAnalysisAndLocalityRuns) {
  AnalysisOptions o;
  o.hip.hip.k = 16;
  o.hip.hip.b_q = 8;
  o.hip.hip.b_k = 2;
  o.hip.dense_layers = 1;
  const PairedAnalysis a = run_paired_analysis(
      testing::default_model(),
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. One day, "
      "she saw a big red ball in the park. She ran to the ball and kicked it high into the sky.",
      o);
  ASSERT_EQ(a.inputs.size(), 6u);
  const hip::AttentionInputs in = layer_view(a.inputs[3]);
  EXPECT_EQ(in.tq, static_cast<int64_t>(a.prompt_ids.size()));
  const hip::MaskResult mask = hip::estimate_masks_reference(in, o.hip.hip).mask;
  const std::vector<double> recall =
      hip::mean_per_head(hip::mask_recall(mask, hip::oracle_masks(in, o.hip.hip)), in.hq, mask.query_blocks);
  for (int64_t h = 0; h < in.hq; ++h) EXPECT_DOUBLE_EQ(recall[h], a.layers[3].heads[h].recall);

  hip::LocalityParams lp;
  lp.deltas = {1, 4, 16};
  const hip::ScoreLocality loc = hip::score_locality(in, o.hip.hip, 2, {in.tq - 1, in.tq - 2}, lp);
  ASSERT_EQ(loc.deltas.size(), 3u);
  EXPECT_GT(loc.deltas[0].pairs, 0);
  // Scores of neighbouring keys differ less than those of distant keys (the paper's locality).
  EXPECT_LT(loc.deltas[0].stddev, loc.deltas[2].stddev);
}

}  // namespace
}  // namespace hipstudio
