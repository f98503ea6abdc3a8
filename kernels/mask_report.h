#pragma once
// Everything `hipstudio mask` reports, computed without any file or JSON: HiP masks, the exact
// oracle and the random baseline, their recall and attention mass, and (with V) sparse vs dense
// outputs. The command only reads inputs and writes this out, so tests can check the logic here.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/attention_metrics.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"
#include "kernels/sparse_attention_reference.h"

namespace hipstudio::hip {

struct MaskReportOptions {
  uint64_t random_seed = 0;  // seed of the random-selection baseline
  int threads = 0;           // 0: all hardware threads
};

// One way of choosing blocks (HiP, oracle or random) and how well it does.
struct SelectionReport {
  MaskResult mask;
  std::vector<double> recall;                // (heads, query_blocks) against the oracle
  std::vector<double> recall_per_head;       // (heads) mean over all query blocks
  std::vector<double> recall_searched_per_head;  // (heads) mean over blocks with N > Kb; NaN if none
  AttentionMass mass;                        // per query and per head
  std::vector<double> output_error;          // (heads) relative L2 vs dense; empty without V
  AttentionOutput output;                    // sparse output; empty without V
};

struct MaskReport {
  int64_t searched_query_blocks = 0;  // query blocks whose range exceeds the budget
  SelectionReport hip, oracle, random;
  std::vector<SelectionReport> compared;  // one per mask given in `compared`, same order
  AttentionOutput dense;              // empty without V
  double seconds_hip = 0, seconds_oracle = 0, seconds_metrics = 0;
};

// Validates params and inputs (HipParamError, AttentionInputError). With in.v null the outputs
// and output errors are left empty. `compared`: masks of other selection methods (the shape of
// make_empty_mask(in, p)), measured by the same metrics against the same oracle and dense pass;
// the HiP, oracle and random reports do not depend on them.
MaskReport build_mask_report(const AttentionInputs& in, const HipParams& p, const MaskReportOptions& opt = {},
                             std::vector<MaskResult> compared = {});

}  // namespace hipstudio::hip
