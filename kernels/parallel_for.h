#pragma once
// A minimal deterministic work splitter for the CPU reference: items are handed out one at a time
// from an atomic counter (later query blocks cost more under causal masking, so static chunks
// would idle a core), and every item writes only its own outputs, so results never depend on the
// number of threads.
#include <cstdint>
#include <functional>

namespace hipstudio::hip {

// Threads for small work started very often (a decode step's 32 heads, once a layer): a few, since
// starting them is part of the cost and a machine's hardware threads may be many more.
inline constexpr int kFewThreads = 8;

// Threads that parallel_for will use for n items when asked for `threads` (0 = all hardware
// threads); at least 1, at most n (when n >= 1).
int parallel_workers(int64_t n, int threads);

// Calls fn(item, worker) for every item in [0, n), worker in [0, parallel_workers(n, threads)).
// Each worker may keep scratch space indexed by `worker`. The first exception thrown by fn stops
// the hand-out of new items and is rethrown here after all threads have joined.
void parallel_for(int64_t n, int threads, const std::function<void(int64_t item, int worker)>& fn);

}  // namespace hipstudio::hip
