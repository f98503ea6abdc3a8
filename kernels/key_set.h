#pragma once
// The keys one query attends under a block selection (paper Algorithm 1's sparse attention step):
//   [0, min(S, e + 1))  U  the keys of the selected blocks  U  [dense_from, e]
// with e the query's visible end (its position when causal, tk - 1 otherwise), each key once,
// ascending. Keys beyond e are dropped: selected blocks end at or before the block's first
// position, so this only matters when given positions decrease inside a query block.
#include <cstdint>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"

namespace hipstudio::hip {

void attended_keys(const AttentionInputs& in, const HipParams& p, const MaskResult& m, int64_t head, int64_t query,
                   std::vector<int64_t>& keys);

}  // namespace hipstudio::hip
