// The probes' clock (kernels/cuda/probe/*.cu). The median of timed runs, and graph replays:
// `calls` launches captured in one CUDA graph, run once eagerly first (one-time set-up outside the
// capture), the graph replayed once untimed (its first launch uploads it), then 15 timed replays
// between the kernels' own event pair (gpu::EventPair) on the probe's stream.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/common.cuh"

namespace hipstudio::probe {

// The upper median (the middle element of an odd count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median replay in milliseconds.
template <class F>
double graph_replay_ms(cudaStream_t s, int calls, F launch) {
  for (int i = 0; i < calls; ++i) launch(i);
  HIP_CUDA_CHECK(cudaStreamSynchronize(s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  HIP_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) launch(i);
  HIP_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  HIP_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  HIP_CUDA_CHECK(cudaGraphLaunch(ge, s));
  gpu::EventPair events(s);
  std::vector<double> ms;
  for (int r = 0; r < 15; ++r) {
    events.start();
    HIP_CUDA_CHECK(cudaGraphLaunch(ge, s));
    ms.push_back(events.stop_ms());
  }
  HIP_CUDA_CHECK(cudaGraphExecDestroy(ge));
  HIP_CUDA_CHECK(cudaGraphDestroy(g));
  return median(ms);
}

// Microseconds a launch: the median replay of a graph of `calls` launches, over calls.
template <class F>
double graph_us_per_call(cudaStream_t s, int calls, F launch) {
  return 1e3 * graph_replay_ms(s, calls, launch) / calls;
}

}  // namespace hipstudio::probe
