#pragma once
// The soak's memory verdict (soak.cpp): what the process keeps growing, not where RSS happens to
// stand at the end. The first loop's RSS is compared with the lower of the last two loops' (of three
// or more): a leak raises every later loop, while which result the GUI holds when a loop ends moves
// RSS up and down by ~10 MiB (CI's seed 608799614 read 346, 356, 366 MiB over three loops; eight
// loops of that seed here read 356, 366, 355, 355, 355, 355, 355, 355). Over three loops a leak of
// ~10 MiB a loop looks like that; ctest therefore runs five, where it keeps 30 MiB.
#include <algorithm>
#include <vector>

namespace hipstudio::gui {

// MiB above the first loop that the last loops all keep (0 for fewer than two loops).
inline double persisting_rss_growth(const std::vector<double>& loop_rss_mib) {
  const size_t n = loop_rss_mib.size();
  if (n < 2) return 0.0;
  const double later = n >= 3 ? std::min(loop_rss_mib[n - 1], loop_rss_mib[n - 2]) : loop_rss_mib[n - 1];
  return later - loop_rss_mib.front();
}

// Growth allowed over a first loop of `first_rss_mib`: 5%, at least 8 MiB (below ~160 MiB the
// allocator's own noise would do).
inline double soak_rss_allowance(double first_rss_mib) { return std::max(0.05 * first_rss_mib, 8.0); }

// The verdict: whether the last loops keep more than the allowance above the first.
inline bool soak_rss_grew(const std::vector<double>& loop_rss_mib) {
  return !loop_rss_mib.empty() && persisting_rss_growth(loop_rss_mib) > soak_rss_allowance(loop_rss_mib.front());
}

}  // namespace hipstudio::gui
