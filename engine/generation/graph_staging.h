#pragma once
// The per-step inputs of a decode step's CUDA graphs (decode_graph.h, batch_decode_graph.h): int64
// words the host writes into pinned memory and the first graph's first node copies to the device,
// so that a step launches nothing eagerly before its first graph (two eager fill_ launches there
// left the GPU idle ~25 us a step: each launch's host time, kernels/BENCHMARKS.md's timeline). The
// host waits for the previous step's copy before writing (wait_until_read; a no-op in practice:
// each step ends by copying its logits to the host). Only with a CUDA LibTorch (the graphs' build).
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace hipstudio {

class GraphStaging {
 public:
  // `words` int64 values, zero on the host and on the device.
  GraphStaging(int64_t words, const c10::Device& device);
  ~GraphStaging();
  GraphStaging(const GraphStaging&) = delete;
  GraphStaging& operator=(const GraphStaging&) = delete;

  // The host words; write them only after wait_until_read().
  int64_t* host() { return host_; }
  void wait_until_read();
  // The copy of every word to device(), on `stream` (a cudaStream_t): the node a graph captures, or
  // an eager copy outside any step (the captures' passes).
  void copy(void* stream) const;
  // Records, on `stream`, that the copy replayed before it has read the words.
  void mark_read(void* stream);
  // int64 [words] on the device, where the copy lands (the graphs read views of it).
  const at::Tensor& device() const { return device_; }

 private:
  int64_t* host_ = nullptr;
  void* read_ = nullptr;  // cudaEvent_t
  at::Tensor device_;
};

}  // namespace hipstudio
