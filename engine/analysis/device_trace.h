#pragma once
// The Iterations view's data for a layer whose inputs stay on the device (a CUDA run): the CUDA
// kernels' own trace of one (head, query block) and the oracle's block scores of that block,
// computed where the tensors live, so nothing of the layer is copied to the host. The float64 CPU
// reference (hip::trace_block_mask, hip::oracle_block_scores) defines both; a gpu test compares.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "kernels/hip_params.h"
#include "kernels/hip_trace.h"

namespace hipstudio {

struct DeviceTrace {
  hip::MaskTrace trace;
  std::vector<double> oracle_scores;  // (hi - lo) oracle block scores, block lo first
};

// Empty where the layer's inputs are host arrays (a CPU run, a capture): use the reference there.
// Scores are float64 for float32 inputs (as the reference), float32 products for bf16/f16 ones.
std::optional<DeviceTrace> trace_on_device(const LayerInputs& inputs, const hip::HipParams& p, int64_t head,
                                           int64_t query_block);

}  // namespace hipstudio
