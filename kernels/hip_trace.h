#pragma once
// What the hierarchical search did for one (head, query block): every branch of every iteration
// with its range, representative block, score and whether it survived. The GUI draws this; the
// tests replay it. Plain data, no behaviour.
#include <cstdint>
#include <vector>

namespace hipstudio::hip {

struct TraceBranch {
  int32_t begin = 0;   // first key block of the branch
  int32_t end = 0;     // one past its last key block
  int32_t repr = 0;    // representative key block: begin + min(end - begin - 1, floor(rho * (end - begin)))
  double score = 0;    // max of dot(q, k) over the sampled rows x the sampled keys of repr
  bool kept = false;   // among the Kb best (score descending, then begin ascending)
};

struct TraceIteration {
  // For each node in ascending order of start: its left half then its right half, or the node
  // itself when it holds one block. Kept branches, in ascending begin, are the next nodes.
  std::vector<TraceBranch> branches;
};

struct MaskTrace {
  int64_t head = 0;
  int64_t query_block = 0;
  int64_t row_begin = 0, row_end = 0;  // query rows of the block
  int64_t p0 = 0;                      // visible end of the first row
  int64_t lo = 0, hi = 0;              // search range in key blocks
  int64_t dense_from = 0;              // first key of the dense window
  std::vector<int32_t> initial_begin;  // (Kb) initial nodes [begin, end); empty when N <= Kb
  std::vector<int32_t> initial_end;    // (Kb)
  std::vector<TraceIteration> iterations;
  std::vector<int32_t> blocks;         // final mask, ascending (N entries when N <= Kb, else Kb)
};

}  // namespace hipstudio::hip
