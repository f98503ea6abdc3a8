#include "engine/views/trace_view.h"

#include <algorithm>

#include "kernels/mask_reference.h"
#include "kernels/oracle.h"

namespace hipstudio {

std::vector<int32_t> oracle_selection_of_scores(const std::vector<double>& scores, int64_t lo, int64_t kb) {
  std::vector<int32_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  const size_t take = std::min<size_t>(order.size(), static_cast<size_t>(std::max<int64_t>(0, kb)));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(take), order.end(), [&](int32_t a, int32_t b) {
    const double sa = scores[static_cast<size_t>(a)], sb = scores[static_cast<size_t>(b)];
    return sa != sb ? sa > sb : a < b;
  });
  std::vector<int32_t> out;
  for (size_t i = 0; i < take; ++i) out.push_back(static_cast<int32_t>(lo + order[i]));
  std::sort(out.begin(), out.end());
  return out;
}

BlockTraceView trace_view_of(int64_t layer, const hip::HipParams& p, hip::MaskTrace trace, std::vector<double> oracle_scores,
                             const std::string& source) {
  BlockTraceView v;
  v.layer = layer;
  v.params = p;
  v.trace = std::move(trace);
  v.oracle_scores = std::move(oracle_scores);
  v.oracle_blocks = oracle_selection_of_scores(v.oracle_scores, v.trace.lo, hip::hip_kb(p));
  v.source = source;
  return v;
}

BlockTraceView reference_trace_view(const hip::AttentionInputs& in, const hip::HipParams& p, int64_t layer, int64_t head,
                                    int64_t query_block) {
  return trace_view_of(layer, p, hip::trace_block_mask(in, p, head, query_block), hip::oracle_block_scores(in, p, head, query_block),
                       "float64 CPU reference");
}

}  // namespace hipstudio
