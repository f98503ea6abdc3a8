#include "kernels/mask_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "kernels/dot_f64.h"
#include "kernels/mask_reference.h"

namespace hipstudio::hip {
namespace {

// CPU time of the calling thread: on a machine shared with builds and tests it measures the work
// instead of the time slices the scheduler happened to give; wall time is kept for multi-threaded
// runs, whose work is spread over other threads.
struct Timer {
  bool cpu;
  double start;
  static double now(bool cpu) {
    if (cpu) {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  explicit Timer(bool cpu_time) : cpu(cpu_time), start(now(cpu_time)) {}
  double seconds() const { return now(cpu) - start; }
};

// splitmix64 + Box-Muller: reproducible Gaussian inputs without <random>'s unspecified distributions.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  double normal() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

// Dense causal scores of the sampled query blocks; returns (seconds, dots computed). A checksum of
// the scores is kept so the compiler cannot drop the work.
std::pair<double, double> time_dense(const AttentionInputs& in, int64_t b_q, int64_t blocks, double* checksum) {
  const int64_t qbs = (in.tq + b_q - 1) / b_q;
  blocks = std::min(blocks, qbs);
  std::vector<double> rows, out(static_cast<size_t>(b_q));
  double dots = 0, sink = 0;
  const Timer timer(true);
  for (int64_t s = 0; s < blocks; ++s) {
    // Evenly spread, always including the last block.
    const int64_t qb = blocks == 1 ? qbs - 1 : s * (qbs - 1) / (blocks - 1);
    const int64_t r0 = qb * b_q, r1 = std::min(in.tq, r0 + b_q);
    rows.assign(in.q + r0 * in.d, in.q + r1 * in.d);
    const int64_t last = in.tk - in.tq + r1 - 1;  // keys beyond each row's position are masked
    for (int64_t key = 0; key <= last; ++key) {
      dot_rows_f64(rows.data(), r1 - r0, in.k + key * in.d, in.d, out.data());
      sink += out[0];
    }
    dots += static_cast<double>((r1 - r0) * (last + 1));
  }
  *checksum += sink;
  return {timer.seconds(), dots};
}

}  // namespace

std::vector<MaskBenchRow> run_mask_bench(const MaskBenchOptions& opt,
                                         const std::function<void(const MaskBenchRow&)>& on_row) {
  validate_hip_params(opt.params);
  std::vector<MaskBenchRow> rows;
  double checksum = 0;
  for (int64_t t : opt.tokens) {
    if (t < 1 || opt.dim < 1) throw AttentionInputError("bench sizes must be >= 1");
    std::vector<float> q(static_cast<size_t>(t * opt.dim)), k(static_cast<size_t>(t * opt.dim));
    Rng rng{opt.seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(t)};
    for (float& x : q) x = static_cast<float>(rng.normal());
    for (float& x : k) x = static_cast<float>(rng.normal());
    AttentionInputs in;
    in.q = q.data();
    in.k = k.data();
    in.hq = in.hkv = 1;
    in.tq = in.tk = t;
    in.d = opt.dim;

    MaskBenchRow row;
    row.tokens = t;
    MaskOptions mopt;
    mopt.threads = opt.threads;
    const Timer mask_timer(opt.threads == 1);
    const MaskEstimate est = estimate_masks_reference(in, opt.params, mopt);
    row.mask_seconds = mask_timer.seconds();
    for (int64_t b : est.mask.branches) row.branches += b;

    const auto [dense_s, dense_dots] = time_dense(in, opt.params.b_q, opt.dense_blocks, &checksum);
    const double total_dots = static_cast<double>(t) * static_cast<double>(t + 1) / 2.0;
    row.dense_sampled_fraction = dense_dots / total_dots;
    row.dense_seconds = dense_s / row.dense_sampled_fraction;

    const int64_t last = est.mask.query_blocks - 1;
    std::vector<double> single;
    for (int r = 0; r < std::max(1, opt.single_repeats); ++r) {
      const Timer single_timer(true);
      const MaskTrace trace = trace_block_mask(in, opt.params, 0, last);
      single.push_back(single_timer.seconds() * 1e3);
      row.single_iterations = static_cast<int32_t>(trace.iterations.size());
    }
    std::sort(single.begin(), single.end());
    row.single_ms = single[single.size() / 2];
    rows.push_back(row);
    if (on_row) on_row(row);
  }
  if (checksum == 12345.678) rows.front().tokens += 0;  // keeps the dense work observable
  return rows;
}

}  // namespace hipstudio::hip
