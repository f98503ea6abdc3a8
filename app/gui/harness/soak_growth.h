#pragma once
// The soak's memory verdict (soak.cpp): what the process keeps growing, not where RSS happens to
// stand at the end. The first loop's RSS is compared with the lower of the last two loops' (of three
// or more): a leak raises every later loop, while which result the GUI holds when a loop ends moves
// RSS up and down by ~10 MiB (CI's seed 608799614 read 346, 356, 366 MiB over three loops; eight
// loops of that seed here read 356, 366, 355, 355, 355, 355, 355, 355).
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

}  // namespace hipstudio::gui
