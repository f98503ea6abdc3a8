#pragma once
// The random-selection baseline of the paper's theorem 1: the same budget of key blocks, chosen
// uniformly at random (without replacement) from each search range. Every view shows
// "HiP vs random vs oracle" with it.
#include <cstdint>

#include "kernels/attention_inputs.h"
#include "kernels/hip_params.h"
#include "kernels/mask_reference.h"

namespace hipstudio::hip {

// min(Kb, N) distinct blocks of [lo, hi) per (head, query block), ascending. The generator is
// splitmix64 seeded from (seed, item index) and subsets come from Floyd's algorithm with
// rejection-sampled bounded integers, so a seed gives the same masks on every platform and for
// every thread count (threads 0: all hardware threads). Only shapes and positions of `in` are read.
MaskResult random_masks(const AttentionInputs& in, const HipParams& p, uint64_t seed, int threads = 0);

}  // namespace hipstudio::hip
