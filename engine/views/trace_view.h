#pragma once
// The iteration-trace view, one rule for every caller: the GUI's Iterations stepper (its CPU path
// and the device's trace), `capture`'s traces and the report's and `export`'s iteration figure.
// For one (head, query block): HiP's search trace (hip::trace_block_mask, the float64 reference),
// the oracle's block scores over the search range (hip::oracle_block_scores) and the oracle's
// selection taken from those scores by oracle_selection_of_scores. Scores, not a mask row, are what
// the view keeps: they exist for a single block at O(T d), at any prompt length.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/hip_trace.h"

namespace hipstudio {

struct BlockTraceView {
  int64_t layer = 0;
  hip::HipParams params;
  hip::MaskTrace trace;                 // head and query block inside
  std::vector<double> oracle_scores;    // (hi - lo) oracle block scores, block lo first
  std::vector<int32_t> oracle_blocks;   // the oracle's selection, ascending
  std::string source;                   // what traced it: the CUDA kernels or the CPU reference
};

// The oracle's rule (kernels/oracle.h) on one block's scores: the Kb = k / b_k best blocks of
// [lo, lo + scores.size()), score descending, ties to the smaller block, all of them when there
// are at most Kb; ascending block indices.
std::vector<int32_t> oracle_selection_of_scores(const std::vector<double>& scores, int64_t lo, int64_t kb);

// The view from a trace and scores computed elsewhere (the device, a capture's stored arrays).
BlockTraceView trace_view_of(int64_t layer, const hip::HipParams& p, hip::MaskTrace trace, std::vector<double> oracle_scores,
                             const std::string& source);

// The float64 CPU reference of one (head, query block).
BlockTraceView reference_trace_view(const hip::AttentionInputs& in, const hip::HipParams& p, int64_t layer, int64_t head,
                                    int64_t query_block);

}  // namespace hipstudio
