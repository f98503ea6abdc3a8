// Kernel timeline probe: a library preloaded into any CUDA program (`LD_PRELOAD=libkernel_timeline.so
// HIPSTUDIO_TIMELINE=FILE hipstudio bench model ...`) that writes every kernel, copy and memset the
// GPU ran, and the host's launch calls, with their start and end in CUPTI's clock (nanoseconds, one
// clock for host and device), as CSV lines:
//   kernel,NAME,START,END,STREAM,GRAPH_ID,GRID_X,BLOCK_X
//   memcpy,KIND,START,END,STREAM,GRAPH_ID,BYTES,0      memset,-,START,END,STREAM,GRAPH_ID,BYTES,0
//   api,NAME,START,END,THREAD,0,0,0                    (launches, graph launches, copies, syncs)
// Why: the GPU machine has no Nsight Systems, and a decode step is ~300 kernels replayed from CUDA
// graphs, where launch gaps and idle stretches are what a benchmark's one number hides. Kernels inside
// graphs are recorded one by one (CUPTI's concurrent-kernel records), so a step's gaps can be read.
// Build on the GPU machine (scripts/dev/device-scale timeline does):
//   g++ -shared -fPIC -O2 kernels/cuda/probe/kernel_timeline.cpp -I$CUDA/include -L$CUPTI_DIR -lcupti
//       -o /tmp/libkernel_timeline.so
// A probe for measurements, not part of hipstudio: tracing costs each launch some time, so its
// durations are read against each other, not as the benchmark's figures.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

FILE* out = nullptr;
std::mutex out_lock;
std::atomic<bool> flushed{false};

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "kernel_timeline: %s failed: %s\n", what, text ? text : "?");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = size_t{16} << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

// The runtime calls worth seeing beside the kernels: the host's launches and waits.
bool interesting_api(const char* name) {
  static const char* const kept[] = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch", "cudaMemcpyAsync",
                                     "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemsetAsync",
                                     "cudaEventSynchronize"};
  for (const char* k : kept)
    if (std::strncmp(name, k, std::strlen(k)) == 0) return true;
  return false;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> hold(out_lock);
  while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        std::fprintf(out, "kernel,%s,%llu,%llu,%u,%u,%d,%d\n", k->name ? k->name : "?",
                     static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end), k->streamId,
                     k->graphId, k->gridX, k->blockX);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        std::fprintf(out, "memcpy,%u,%llu,%llu,%u,%u,%llu,0\n", static_cast<unsigned>(m->copyKind),
                     static_cast<unsigned long long>(m->start), static_cast<unsigned long long>(m->end), m->streamId,
                     m->graphId, static_cast<unsigned long long>(m->bytes));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        std::fprintf(out, "memset,-,%llu,%llu,%u,%u,%llu,0\n", static_cast<unsigned long long>(m->start),
                     static_cast<unsigned long long>(m->end), m->streamId, m->graphId,
                     static_cast<unsigned long long>(m->bytes));
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const char* name = nullptr;
        cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
        if (name && interesting_api(name))
          std::fprintf(out, "api,%s,%llu,%llu,%u,0,0,0\n", name, static_cast<unsigned long long>(a->start),
                       static_cast<unsigned long long>(a->end), a->threadId);
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

void finish() {
  if (flushed.exchange(true)) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> hold(out_lock);
  if (out) std::fclose(out);
  out = nullptr;
}

__attribute__((constructor)) void start() {
  const char* path = std::getenv("HIPSTUDIO_TIMELINE");
  if (!path || !*path) return;
  out = std::fopen(path, "w");
  if (!out) {
    std::fprintf(stderr, "kernel_timeline: cannot write %s\n", path);
    return;
  }
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register callbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernels");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable copies");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enable memsets");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "enable runtime calls");
  // Buffers handed over every 200 ms: this atexit handler, registered before the CUDA runtime's own,
  // runs after the runtime's teardown, so the last records may be lost with it; at most ~200 ms.
  check(cuptiActivityFlushPeriod(200), "flush period");
  std::atexit(finish);
}

__attribute__((destructor)) void stop() { finish(); }

}  // namespace
