#pragma once
// A selection method's mask as the rows the CUDA block-sparse attention reads. The kernels attend,
// per query block, the sink [0, sink), the listed b_k blocks and the dense tail from HiP's
// dense_from (kernels/cuda/attention_parts.cuh); a method's mask (kernels/methods/selection_method.h)
// means the sink, its blocks and the tail from its own dense_from, the three parts as one set
// (kernels/key_set.h). Where they differ for a method choosing blocks of b > b_k tokens (Quest's
// pages), the rows are rewritten so that both attend the same keys:
//  - blocks inside the sink (a page starting below it) are dropped: the sink holds their keys;
//  - the b_k blocks from the method's dense_from (or the sink's end, above it) up to HiP's are appended (at most b / b_k - 1:
//    the two boundaries differ by less than b), all above the method's own blocks, so each row
//    stays ascending.
// Device-agnostic LibTorch ops (the CPU in tests, CUDA in a run).
#include <cstdint>

#include <ATen/ATen.h>

#include "kernels/hip_params.h"

namespace hipstudio {

struct MethodRows {
  at::Tensor blocks;  // (hq, qbs, kb + gap) int32, ascending, -1 padded
  at::Tensor counts;  // (hq, qbs) int32
};

// blocks (hq, qbs, kb) int32 and counts (hq, qbs) int32 of the method's mask over the rows of a call
// with tq queries and tk keys (query i at tk - tq + i), dense_from (qbs) int64; gap: the extra
// columns (b / b_k - 1, or 0 for a method of b_k blocks, whose rows come back as they are).
MethodRows method_rows(const at::Tensor& blocks, const at::Tensor& counts, const at::Tensor& dense_from,
                       const hip::HipParams& p, int64_t gap, int64_t tq, int64_t tk);

}  // namespace hipstudio
