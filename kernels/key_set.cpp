#include "kernels/key_set.h"

#include <algorithm>

namespace hipstudio::hip {

void attended_keys(const AttentionInputs& in, const HipParams& p, const MaskResult& m, int64_t head, int64_t query,
                   std::vector<int64_t>& keys) {
  keys.clear();
  const int64_t e = visible_end(in, p, query);
  const int64_t qb = query / p.b_q;
  const int64_t sink_end = std::min(p.sink, e + 1);
  for (int64_t key = 0; key < sink_end; ++key) keys.push_back(key);
  const int32_t* blocks = m.row(head, qb);
  const int64_t count = std::min<int64_t>(m.count(head, qb), m.kb);
  for (int64_t j = 0; j < count; ++j) {
    if (blocks[j] < 0) continue;  // padding (or a foreign mask's placeholder)
    for (int64_t key = int64_t{blocks[j]} * p.b_k; key < (int64_t{blocks[j]} + 1) * p.b_k && key <= e; ++key) {
      keys.push_back(key);
    }
  }
  for (int64_t key = m.dense_from[qb]; key <= e; ++key) keys.push_back(key);
  // The three parts are disjoint and ascending for any selection inside [lo, hi); a selection from
  // elsewhere (a capture, a user's mask) is normalised rather than trusted.
  if (!std::is_sorted(keys.begin(), keys.end()) || std::adjacent_find(keys.begin(), keys.end()) != keys.end()) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  }
}

}  // namespace hipstudio::hip
