#pragma once
// The summary statistics the model benchmarks print: a median and, next to it, its spread.
#include <algorithm>
#include <vector>

namespace hipstudio::app {

inline double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Half the interquartile range: the spread printed next to a median.
inline double half_iqr(std::vector<double> v) {
  if (v.size() < 2) return 0.0;
  std::sort(v.begin(), v.end());
  return 0.5 * (v[v.size() * 3 / 4] - v[v.size() / 4]);
}

}  // namespace hipstudio::app
