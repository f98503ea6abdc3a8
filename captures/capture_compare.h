#pragma once
// Two captures side by side (Tracy's compare mode, wolfpld/tracy server/TracyView.cpp "compare"):
// for every layer either holds, A's and B's numbers and B - A; for the whole model, the output
// metrics. What the GUI's "Compare captures" table shows and `hipstudio open A --compare B --print`
// prints.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/analysis/paired_result.h"

namespace hipstudio::captures {

// One number of A and B; NaN where a side lacks it (a layer it does not have, a windowed layer's
// heads).
struct ComparedValue {
  double a = 0, b = 0;
  double diff() const { return b - a; }
};

struct ComparedLayer {
  int64_t layer = 0;
  bool in_a = false, in_b = false;
  // Means over the layer's heads of the views layer's per-head numbers (HeadQuality): recall
  // against the oracle, attention mass kept, attention output error against dense.
  ComparedValue recall, mass, out_rel_err;
  ComparedValue hip_prefill_ms;  // the HiP side's prefill time of the layer (mask + sparse + dense + other)
};

struct CaptureComparison {
  // The model-level numbers, in display order: KL(dense || HiP) of the next-token distribution
  // (the captures' only KL: it is the model output's), perplexities, top-1 agreement, prefill times.
  std::vector<std::pair<std::string, ComparedValue>> model;
  std::vector<ComparedLayer> layers;  // every layer index of either capture, ascending
  // Where the two runs differ in what they ran (prompt, parameters, model): the numbers' context.
  std::vector<std::string> differences;
};

CaptureComparison compare_captures(const PairedAnalysis& a, const PairedAnalysis& b);

// The comparison as a plain-text table (columns A, B, B-A), labelled with the two names.
std::string comparison_text(const CaptureComparison& c, const std::string& name_a, const std::string& name_b);

}  // namespace hipstudio::captures
