// StreamingLLM (Xiao et al. 2024, Efficient Streaming Language Models with Attention Sinks): the
// sink plus the most recent keys. In HiP's range of b_k blocks, the last min(k / b_k, hi - lo)
// blocks [hi - take, hi) of every head, so with the dense tail a window of the budget's size. A
// decode refresh takes the most recent blocks of the current query's range: the same rule.
#include <algorithm>

#include "kernels/methods/method_mask.h"
#include "kernels/methods/selection_method.h"

namespace hipstudio::hip::methods {
namespace {

int64_t key_block(const HipParams& p, const MethodValues&) { return p.b_k; }

MaskResult streaming_reference(const AttentionInputs& in, const SelectionContext& ctx, const MethodState*) {
  const HipParams& p = ctx.hip;
  MaskResult m = empty_method_mask(in, p, p.b_k);
  std::vector<int32_t> chosen;
  for (int64_t qb = 0; qb < m.query_blocks; ++qb) {
    const MethodRange r = method_range(in, p, p.b_k, qb);
    const int64_t take = std::min(m.kb, r.blocks());
    chosen.clear();
    for (int64_t j = r.hi - take; j < r.hi; ++j) chosen.push_back(static_cast<int32_t>(j));
    for (int64_t h = 0; h < m.heads; ++h) {
      std::vector<int32_t> row(chosen);
      write_method_blocks(p, p.b_k, row, m.blocks.data() + m.index(h, qb) * m.kb, &m.counts[m.index(h, qb)], m.kb);
    }
  }
  return m;
}

}  // namespace

const SelectionMethod& streaming_method() {
  static const SelectionMethod m{
      "streaming", "StreamingLLM",
      "Xiao et al. 2024, Efficient Streaming Language Models with Attention Sinks (ICLR 2024)",
      "the sink and the last min(k / b_k, hi - lo) key blocks of the range: a window of the budget's size",
      {}, key_block, nullptr, streaming_reference, nullptr};
  return m;
}

}  // namespace hipstudio::hip::methods
