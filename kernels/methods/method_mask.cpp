#include "kernels/methods/method_mask.h"

#include <algorithm>
#include <numeric>

namespace hipstudio::hip::methods {

MaskResult empty_method_mask(const AttentionInputs& in, const HipParams& p, int64_t b) {
  MaskResult m = make_empty_mask(in, p);
  for (int64_t qb = 0; qb < m.query_blocks; ++qb) m.dense_from[qb] = method_range(in, p, b, qb).dense_from;
  return m;
}

void top_indices(const double* scores, int64_t n, int64_t take, std::vector<int32_t>& out) {
  out.resize(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), 0);
  if (n > take) {
    std::nth_element(out.begin(), out.begin() + take, out.end(), [&](int32_t a, int32_t b) {
      if (scores[a] != scores[b]) return scores[a] > scores[b];
      return a < b;
    });
    out.resize(static_cast<size_t>(take));
    std::sort(out.begin(), out.end());
  }
}

void write_method_blocks(const HipParams& p, int64_t b, std::vector<int32_t>& chosen, int32_t* row, int32_t* count,
                         int64_t kb) {
  std::sort(chosen.begin(), chosen.end());
  const int64_t f = b / p.b_k, first = p.sink / p.b_k;
  int64_t c = 0;
  for (int32_t j : chosen) {
    for (int64_t t = 0; t < f && c < kb; ++t) {
      const int64_t block = int64_t{j} * f + t;
      if (block >= first) row[c++] = static_cast<int32_t>(block);
    }
  }
  *count = static_cast<int32_t>(c);
  std::fill(row + c, row + kb, -1);
}

}  // namespace hipstudio::hip::methods
