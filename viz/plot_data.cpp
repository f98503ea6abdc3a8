#include "viz/plot_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hipstudio::viz {

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || target < 1) return ticks;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  // A range that straddles a coarse step would get a single tick (only "0" on [-5, 6] with two
  // wanted): take the next finer 1-2-5 step until at least two ticks fall inside.
  for (int tries = 0; tries < 4; ++tries) {
    ticks.clear();
    for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
      ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (ticks.size() >= 2) break;
    const double m = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    step *= m < 1.5 ? 0.5 : m < 3 ? 0.5 : 0.4;  // 1 -> 0.5, 2 -> 1, 5 -> 2
  }
  return ticks;
}

std::vector<double> cell_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  for (double t : nice_ticks(lo, hi, target))
    if (t == std::floor(t)) ticks.push_back(t);
  if (ticks.empty())
    for (double t = std::ceil(lo); t <= hi; t += 1) ticks.push_back(t);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi)) return ticks;
  for (double d = std::pow(10.0, std::floor(std::log10(lo))); d <= hi; d *= 10)
    if (d >= lo) ticks.push_back(d);
  return ticks;
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  char buf[32];
  if (a >= 10000) std::snprintf(buf, sizeof buf, "%.0fk", v / 1000);
  else if (a >= 100 || a == std::floor(a)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a >= 1) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

namespace {

double coverage(const std::vector<std::pair<int32_t, int32_t>>& nodes, const std::vector<int32_t>& oracle) {
  if (oracle.empty()) return 1.0;
  int64_t inside = 0;
  for (int32_t b : oracle) {
    auto it = std::upper_bound(nodes.begin(), nodes.end(), std::make_pair(b, INT32_MAX));
    if (it != nodes.begin() && b < std::prev(it)->second) ++inside;
  }
  return static_cast<double>(inside) / static_cast<double>(oracle.size());
}

TraceStep make_step(int iteration, std::vector<std::pair<int32_t, int32_t>> nodes, const std::vector<int32_t>& oracle) {
  std::sort(nodes.begin(), nodes.end());
  TraceStep s;
  s.iteration = iteration;
  for (const auto& n : nodes) s.alive_blocks += n.second - n.first;
  s.oracle_coverage = coverage(nodes, oracle);
  s.nodes = std::move(nodes);
  return s;
}

}  // namespace

std::vector<TraceStep> trace_steps(const hip::MaskTrace& t, const std::vector<int32_t>& oracle) {
  std::vector<TraceStep> steps;
  std::vector<std::pair<int32_t, int32_t>> nodes;
  if (t.initial_begin.empty()) {  // N <= Kb: every block selected, no search
    for (int32_t b : t.blocks) nodes.emplace_back(b, b + 1);
    steps.push_back(make_step(-1, nodes, oracle));
    return steps;
  }
  for (size_t j = 0; j < t.initial_begin.size(); ++j) nodes.emplace_back(t.initial_begin[j], t.initial_end[j]);
  steps.push_back(make_step(-1, nodes, oracle));
  for (size_t it = 0; it < t.iterations.size(); ++it) {
    nodes.clear();
    for (const auto& b : t.iterations[it].branches)
      if (b.kept) nodes.emplace_back(b.begin, b.end);
    steps.push_back(make_step(static_cast<int>(it), nodes, oracle));
  }
  return steps;
}

std::vector<int> pruned_at_step(const std::vector<TraceStep>& steps, int64_t lo, int64_t hi) {
  const int64_t n = std::max<int64_t>(0, hi - lo);
  std::vector<int> out(static_cast<size_t>(n), 0);
  std::vector<char> alive(static_cast<size_t>(n));
  for (size_t st = 0; st < steps.size(); ++st) {
    std::fill(alive.begin(), alive.end(), 0);
    for (const auto& [b0, b1] : steps[st].nodes)
      for (int64_t b = std::max<int64_t>(b0, lo); b < std::min<int64_t>(b1, hi); ++b) alive[static_cast<size_t>(b - lo)] = 1;
    // A block alive at every step so far moves its "left at" mark one step on.
    for (int64_t i = 0; i < n; ++i)
      if (alive[static_cast<size_t>(i)] && out[static_cast<size_t>(i)] == static_cast<int>(st)) out[static_cast<size_t>(i)] = static_cast<int>(st) + 1;
  }
  // out[i] = number of leading steps the block was alive in: left at step out[i] (0: never alive).
  return out;
}

}  // namespace hipstudio::viz

namespace hipstudio::viz {

std::vector<uint32_t> rasterize_bars(const std::vector<ImageBar>& bars, double x_lo, double x_hi, double y_lo,
                                     double y_hi, int width, int height, uint32_t background) {
  std::vector<uint32_t> img(static_cast<size_t>(std::max(0, width)) * static_cast<size_t>(std::max(0, height)), background);
  if (width <= 0 || height <= 0 || !(x_hi > x_lo) || !(y_hi > y_lo)) return img;
  auto col = [&](double x) { return (x - x_lo) / (x_hi - x_lo) * width; };
  auto row = [&](double y) { return (y_hi - y) / (y_hi - y_lo) * height; };  // 0 at the top
  for (const ImageBar& b : bars) {
    int c0 = static_cast<int>(std::floor(col(b.x0)));
    int c1 = std::max(c0 + 1, static_cast<int>(std::ceil(col(b.x1))));
    double ra = row(std::max(b.y_from, b.y_to)), rb = row(std::min(b.y_from, b.y_to));
    int r0 = static_cast<int>(std::floor(ra));
    int r1 = std::max(r0 + 1, static_cast<int>(std::ceil(rb)));
    c0 = std::max(c0, 0), c1 = std::min(c1, width);
    r0 = std::max(r0, 0), r1 = std::min(r1, height);
    for (int r = r0; r < r1; ++r) {
      uint32_t* line = img.data() + static_cast<size_t>(r) * static_cast<size_t>(width);
      std::fill(line + c0, line + std::max(c0, c1), b.color);
    }
  }
  return img;
}

}  // namespace hipstudio::viz
