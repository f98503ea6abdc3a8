#pragma once
// The views layer's results: what every view of one layer shows (HiP's, the oracle's and the random
// baseline's masks, their recall, attention mass and output error), as plain data. The GUI worker,
// `analyze`, captures and exports all take these numbers from here (reference_views.h on the CPU,
// engine/analysis/layer_views_backend.h on any device), so the same layer gives the same numbers in
// every view.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"
#include "kernels/attention_rule.h"

namespace hipstudio {

// The one seeding rule of the random baseline: layer l draws with seed + l, so layers differ and a
// run's `analyze` numbers, its GUI panels and its capture agree.
inline uint64_t layer_random_seed(uint64_t seed, int64_t layer) { return seed + static_cast<uint64_t>(layer); }

// A layer's attention maths as the views read it (AttentionMath's window, scale and soft-cap, the
// forward pass's; plain data without LibTorch). Dense probabilities, attention mass and output
// error score s = softcap(scale dot(q, k)) with kernels/score_transform.h's rule. The masks (HiP's
// search, the oracle, the random draw) rank raw dot products: a positive scale and the monotonic cap
// leave every selection unchanged. A windowed layer (window > 0) attends its last `window` keys in
// both runs and HiP does not replace it: its quality numbers are NaN (there is no HiP run to
// measure), its masks say what HiP would select on full causal attention.
using ViewsMath = hip::AttentionRule;

// HiP's selection on one layer over the prompt, with the oracle's and the random baseline's.
struct LayerMaskViews {
  int64_t layer = 0;
  hip::HipParams params;
  ViewsMath math;  // the layer's attention maths
  // `hip` is the sparse side's mask: HiP's search, or the registry method the side ran (`method`).
  std::string method = "hip";
  hip::MaskResult hip, oracle, random;  // same shape; oracle/random: iterations, branches 0
  // False where the oracle was not computed (the GUI's CPU path above its length limit): oracle,
  // random and the recall tables are then empty.
  bool has_oracle = true;
  std::vector<double> recall;         // (heads, query_blocks) HiP vs oracle
  std::vector<double> random_recall;  // (heads, query_blocks) random vs oracle
};

}  // namespace hipstudio
