#include "engine/generation/graph_staging.h"

#include <stdexcept>

#include <ATen/ATen.h>

// Pinned memory and events need a CUDA LibTorch's headers and library, as the graphs do.
#if defined(HIPSTUDIO_TORCH_CUDA) && __has_include(<ATen/cuda/CUDAGraph.h>)
#define HIPSTUDIO_GRAPH_STAGING 1
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDAException.h>
#endif

namespace hipstudio {

#ifdef HIPSTUDIO_GRAPH_STAGING

GraphStaging::GraphStaging(int64_t words, const c10::Device& device) {
  C10_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_), static_cast<size_t>(words) * sizeof(int64_t)));
  for (int64_t i = 0; i < words; ++i) host_[i] = 0;
  cudaEvent_t event = nullptr;
  C10_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  read_ = event;
  device_ = at::zeros({words}, at::TensorOptions().dtype(at::kLong).device(device));
}

GraphStaging::~GraphStaging() {
  if (read_) cudaEventDestroy(static_cast<cudaEvent_t>(read_));
  if (host_) cudaFreeHost(host_);
}

void GraphStaging::wait_until_read() { C10_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(read_))); }

void GraphStaging::copy(void* stream) const {
  C10_CUDA_CHECK(cudaMemcpyAsync(device_.data_ptr(), host_, static_cast<size_t>(device_.numel()) * sizeof(int64_t),
                                 cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
}

void GraphStaging::mark_read(void* stream) {
  C10_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(read_), static_cast<cudaStream_t>(stream)));
}

#else  // no CUDA LibTorch: no graphs, nothing to stage

GraphStaging::GraphStaging(int64_t, const c10::Device&) {
  throw std::logic_error("graph staging needs an engine built against a CUDA LibTorch");
}
GraphStaging::~GraphStaging() = default;
void GraphStaging::wait_until_read() {}
void GraphStaging::copy(void*) const {}
void GraphStaging::mark_read(void*) {}

#endif

}  // namespace hipstudio
