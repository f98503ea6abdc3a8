// Host helpers of the CUDA kernels: error reporting, device queries, buffers, events, conversions.
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/once_per_key.h"
#include "kernels/hip_param_rules.h"

namespace hipstudio::gpu {

void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so that the next call starts clean
  throw CudaError(std::string("CUDA error: ") + what + " failed with " + cudaGetErrorName(e) + " (" +
                  cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line));
}

void throw_arg(const std::string& what) { throw CudaError("HiP CUDA kernels: " + what); }

void check_hip_params(const hip::HipParams& p) {
  const std::string problem = hip::hip_params_problem(p);
  if (!problem.empty()) throw_arg(problem);
}

const char* dtype_name(ElementType t) {
  switch (t) {
    case ElementType::kF32: return "f32";
    case ElementType::kBF16: return "bf16";
    case ElementType::kF16: return "f16";
  }
  return "?";
}

namespace {
std::string probe_device() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  }
  if (n == 0) return "no CUDA device is visible";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "cannot read the CUDA device's properties";
  if (prop.major < 8) {
    return std::string("GPU ") + prop.name + " is compute capability " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) + "; the HiP kernels need 8.0 or newer";
  }
  return "";
}
}  // namespace

// Probed once: cudaGetDeviceProperties costs tens of microseconds, more than a decode step.
std::string device_status() {
  static const std::string status = probe_device();
  return status;
}

bool device_available() { return device_status().empty(); }

namespace {
// The current device's value of `attr`, queried once per attribute: a driver round trip each call,
// and these feed launch choices on every decode step. `fallback` is the value where the driver has
// no answer (nullopt: CudaError).
int cached_device_attribute(cudaDeviceAttr attr, std::optional<int> fallback = std::nullopt) {
  static OncePerKey<int, int> known;
  return known.get(static_cast<int>(attr), [&] {
    int dev = 0, v = 0;
    HIP_CUDA_CHECK(cudaGetDevice(&dev));
    if (!fallback) {
      HIP_CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, dev));
      return v;
    }
    return cudaDeviceGetAttribute(&v, attr, dev) == cudaSuccess ? v : *fallback;
  });
}
}  // namespace

int device_sm_count() { return cached_device_attribute(cudaDevAttrMultiProcessorCount); }

int device_smem_optin() { return cached_device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin); }

bool device_supports_clusters() { return cached_device_attribute(cudaDevAttrClusterLaunch, 0) != 0; }

bool device_is_sm90() {
  return cached_device_attribute(cudaDevAttrComputeCapabilityMajor) == 9 &&
         cached_device_attribute(cudaDevAttrComputeCapabilityMinor) == 0;
}

std::string device_name() {
  int dev = 0;
  HIP_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  HIP_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) + " SMs, " +
         std::to_string(prop.l2CacheSize >> 20) + " MB L2";
}

bool kernel_waits_for_prior_grid(const void* kernel) {
  static OncePerKey<const void*, bool> known;
  return known.get(kernel, [&] {
    cudaFuncAttributes attr{};
    HIP_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    return attr.ptxVersion >= 90 && attr.binaryVersion >= 90;
  });
}

void set_smem(const void* kernel, size_t bytes, const char* name, bool max_shared_carveout) {
  // cudaFuncSetAttribute once per (kernel, largest size so far): it is a host round trip that
  // would otherwise sit in every decode step.
  static std::mutex mu;
  static std::map<const void*, size_t> raised;
  const int optin = device_smem_optin();
  std::lock_guard<std::mutex> lock(mu);
  if (bytes > static_cast<size_t>(optin)) {
    throw_arg(std::string(name) + " needs " + std::to_string(bytes) + " bytes of shared memory, the device allows " +
              std::to_string(optin) + ": reduce k / b_k or the query block");
  }
  size_t& done = raised[kernel];
  if (bytes <= done) return;
  HIP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  if (max_shared_carveout) {
    HIP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        static_cast<int>(cudaSharedmemCarveoutMaxShared)));
  }
  done = bytes;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes) {
    HIP_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    HIP_CUDA_CHECK(cudaMemset(ptr_, 0, bytes));  // an attention workspace's done-counters must start at zero
  }
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = o.bytes_;
  }
  return *this;
}
void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_) throw_arg("upload larger than the buffer");
  HIP_CUDA_CHECK(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
}
void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_) throw_arg("download larger than the buffer");
  HIP_CUDA_CHECK(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
}
void DeviceBuffer::fill_bytes(int value) { HIP_CUDA_CHECK(cudaMemset(ptr_, value, bytes_)); }

void synchronize() { HIP_CUDA_CHECK(cudaDeviceSynchronize()); }

EventPair::EventPair(void* stream) : stream_(stream) {
  cudaEvent_t a, b;
  HIP_CUDA_CHECK(cudaEventCreate(&a));
  HIP_CUDA_CHECK(cudaEventCreate(&b));
  a_ = a;
  b_ = b;
}
EventPair::~EventPair() {
  cudaEventDestroy(static_cast<cudaEvent_t>(a_));
  cudaEventDestroy(static_cast<cudaEvent_t>(b_));
}
void EventPair::start() { HIP_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(a_), static_cast<cudaStream_t>(stream_))); }
double EventPair::stop_ms() {
  HIP_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(b_), static_cast<cudaStream_t>(stream_)));
  HIP_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(b_)));
  float ms = 0;
  HIP_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a_), static_cast<cudaEvent_t>(b_)));
  return ms;
}

uint16_t float_to_bf16(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
float bf16_to_float(uint16_t h) { return __bfloat162float(__ushort_as_bfloat16(h)); }
uint16_t float_to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }
float f16_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }

}  // namespace hipstudio::gpu
