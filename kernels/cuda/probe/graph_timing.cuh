// The probes' clock: `calls` launches captured in one CUDA graph, run once eagerly first (one-time
// set-up outside the capture), the graph replayed once untimed (its first launch uploads it), then
// 15 timed replays; the median replay in milliseconds, by CUDA events on the stream.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/common.cuh"

namespace hipstudio::probe {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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
  cudaEvent_t a, b;
  HIP_CUDA_CHECK(cudaEventCreate(&a));
  HIP_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> ms;
  for (int r = 0; r < 15; ++r) {
    HIP_CUDA_CHECK(cudaEventRecord(a, s));
    HIP_CUDA_CHECK(cudaGraphLaunch(ge, s));
    HIP_CUDA_CHECK(cudaEventRecord(b, s));
    HIP_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    HIP_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  HIP_CUDA_CHECK(cudaEventDestroy(a));
  HIP_CUDA_CHECK(cudaEventDestroy(b));
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
