#pragma once
// The merge loop shared by both tokenizer families: repeatedly merge the adjacent pair with the best
// priority (leftmost on ties) until no adjacent pair merges. llama2.c ranks a pair by the merged
// piece's score, Hugging Face BPE by the merge's line in "merges"; both reduce to this.
// A heap of candidate pairs with lazy invalidation makes it O(n log n) instead of run.c's O(n^2).
#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace hipstudio {

struct BpeMerge {
  double priority;  // lower merges first
  int32_t merged;   // id of the merged symbol
};

// lookup(left_id, right_id) -> std::optional<BpeMerge>; nullopt when the pair does not merge.
template <class Lookup>
std::vector<int32_t> bpe_merge(const std::vector<int32_t>& symbols, const Lookup& lookup) {
  const size_t n = symbols.size();
  if (n < 2) return symbols;
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<int32_t> id = symbols;   // (n) current id at each original position
  std::vector<size_t> prev(n), next(n);  // doubly linked list over live positions; kNone at the ends
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? kNone : i - 1;
    next[i] = i + 1 == n ? kNone : i + 1;
  }
  struct Candidate {
    double priority;
    size_t left;  // original position of the left symbol: order of positions = order in the text
    int32_t left_id, right_id, merged;
  };
  const auto worse = [](const Candidate& a, const Candidate& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.left > b.left;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> heap(worse);
  const auto consider = [&](size_t left) {
    const size_t right = next[left];
    if (right == kNone) return;
    if (const std::optional<BpeMerge> m = lookup(id[left], id[right]))
      heap.push({m->priority, left, id[left], id[right], m->merged});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(i);

  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    // Stale when either side has changed since the candidate was pushed.
    if (!alive[c.left] || id[c.left] != c.left_id) continue;
    const size_t right = next[c.left];
    if (right == kNone || id[right] != c.right_id) continue;
    id[c.left] = c.merged;
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] != kNone) prev[next[right]] = c.left;
    if (prev[c.left] != kNone) consider(prev[c.left]);
    consider(c.left);
  }
  std::vector<int32_t> out;
  for (size_t i = 0; i != kNone; i = next[i]) out.push_back(id[i]);  // position 0 is never merged away
  return out;
}

}  // namespace hipstudio
