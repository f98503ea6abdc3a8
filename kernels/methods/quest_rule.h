#pragma once
// Quest's score of a page for one query row (quest.cpp has the whole rule): the upper bound
//   sum_d max(q_d min_d, q_d max_d)
// in float64, d ascending from +0.0, each product exact; the tensor path adds the same terms in
// the same order, so both give the same bits.
#include <algorithm>
#include <cstdint>

namespace hipstudio::hip::methods {

inline double quest_bound(const float* q, const double* page_min, const double* page_max, int64_t d) {
  double s = 0.0;
  for (int64_t e = 0; e < d; ++e) {
    const double x = q[e];
    s = s + std::max(x * page_min[e], x * page_max[e]);
  }
  return s;
}

}  // namespace hipstudio::hip::methods
