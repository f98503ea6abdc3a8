// GPU memory (label: gpu): a run that cannot fit is refused before it allocates anything, and an
// allocation that really fails ends with an InputError while the next run in the same process works.
// Skips with a message where no GPU exists or this build cannot read the allocator (no CUDA LibTorch).
#include <cstdio>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/formats/model_source.h"
#include "engine/analysis/context_plan.h"
#include "engine/runtime/device_memory.h"
#include "engine/generation/generation.h"
#include "engine/model/kv_cache.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/model/transformer.h"

namespace hipstudio {
namespace {

#define REQUIRE_CUDA_MEMORY_INFO()                                                                        \
  if (!cuda_available())                                                                                  \
    GTEST_SKIP() << "no CUDA: this LibTorch has no CUDA support or no GPU is visible; "                   \
                    "run the gpu-labelled tests on a GPU machine (README: GPU build)";                   \
  if (device_free_bytes(0) == 0)                                                                          \
  GTEST_SKIP() << "this build cannot read free device memory (engine built without HIPSTUDIO_TORCH_CUDA)"

std::shared_ptr<const Model> gpu_model() {
  static std::shared_ptr<const Model> model = load_model(resolve_model_source(""), parse_run_device("cuda", "f32"));
  return model;
}

TEST(GpuMemory, FreeFigureIsPlausible) {
  REQUIRE_CUDA_MEMORY_INFO();
  gpu_model();
  const uint64_t free = device_free_bytes(0);
  // Allocating 256 MiB lowers the figure by about that much (the allocator may round up to its blocks).
  at::Tensor block = at::empty({int64_t{256} << 20}, at::TensorOptions().device(at::kCUDA).dtype(at::kByte));
  const uint64_t after = device_free_bytes(0);
  std::printf("[gpu] free device memory %.1f MiB, after a 256 MiB tensor %.1f MiB\n", free / 1048576.0, after / 1048576.0);
  EXPECT_LE(after + (uint64_t{256} << 20), free + (uint64_t{4} << 20));
  EXPECT_GE(after + (uint64_t{300} << 20), free);
}

TEST(GpuMemory, PromptWhoseKvCacheExceedsFreeMemoryIsRefusedBeforeAllocating) {
  REQUIRE_CUDA_MEMORY_INFO();
  auto model = gpu_model();
  const ModelConfig& c = model->config;
  const uint64_t free = device_free_bytes(0);
  const uint64_t kv_per_token = 2ull * c.n_layers * c.n_kv_heads * c.head_dim * c10::elementSize(model->run.dtype);
  const int64_t tokens = static_cast<int64_t>(free / kv_per_token) * 2;  // twice what the KV cache alone could hold
  const std::vector<int32_t> ids(static_cast<size_t>(tokens), 5);
  const DeviceMemoryStats before = device_memory_stats(0);
  DenseAttention dense;
  std::string message;
  try {
    all_logits(model, ids, dense, /*context_limit=*/tokens + 1);
  } catch (const InputError& e) {
    message = e.what();
  }
  std::printf("[gpu] %lld-token prompt: %s\n", static_cast<long long>(tokens), message.c_str());
  ASSERT_FALSE(message.empty()) << "a " << tokens << "-token prompt was not refused";
  EXPECT_NE(message.find("KV cache"), std::string::npos) << message;
  EXPECT_NE(message.find("on cuda"), std::string::npos) << message;
  EXPECT_NE(message.find("--device cpu"), std::string::npos) << message;
  EXPECT_NE(message.find("--dtype bf16"), std::string::npos) << message;
  // Nothing was allocated for it: the allocator holds what it held before.
  EXPECT_EQ(device_memory_stats(0).reserved_bytes, before.reserved_bytes);
}

TEST(GpuMemory, AllocationThatReallyFailsIsReportedAndTheNextRunWorks) {
  REQUIRE_CUDA_MEMORY_INFO();
  auto model = gpu_model();
  const ModelConfig& c = model->config;
  // Take almost all free memory, leaving 1 GiB: less than the run below allocates, but enough that
  // part of its KV cache is allocated before the failure (so releasing it can be checked).
  std::optional<at::Tensor> hog;
  for (uint64_t leave : {uint64_t{1024} << 20, uint64_t{1280} << 20, uint64_t{1536} << 20}) {
    try {
      const uint64_t free = device_free_bytes(0);
      hog = at::empty({static_cast<int64_t>(free - leave)}, at::TensorOptions().device(at::kCUDA).dtype(at::kByte));
      break;
    } catch (const c10::Error&) {
      release_cached_device_memory();
    }
  }
  ASSERT_TRUE(hog.has_value()) << "could not take most of the GPU's memory";
  // A run past the estimate (as when another process takes the memory after the check): a 4 GiB KV
  // cache, then a prefill, inside the same boundary generate() and the analysis use.
  const int64_t capacity = static_cast<int64_t>((uint64_t{4} << 30) / (2ull * c.n_layers * c.n_kv_heads * c.head_dim * 4)) + 1;
  const DeviceMemoryStats held = device_memory_stats(0);  // the weights, the hog and what is cached
  std::string message;
  try {
    guard_out_of_memory(model->run, "generate", [&] {
      KVCache cache(c, model->run, capacity);
      Transformer transformer(model, capacity);
      DenseAttention dense;
      return transformer.forward({1, 2, 3}, cache, dense);
    });
  } catch (const InputError& e) {
    message = e.what();
  }
  std::printf("[gpu] with the GPU full: %s\n", message.c_str());
  ASSERT_FALSE(message.empty()) << "the allocation did not fail";
  EXPECT_NE(message.find("generate ran out of memory on cuda"), std::string::npos) << message;
  EXPECT_NE(message.find("--device cpu"), std::string::npos) << message;
  // The failed run's KV layers (several hundred MiB) went back to the driver: the allocator holds no
  // more than before the run.
  const DeviceMemoryStats after = device_memory_stats(0);
  std::printf("[gpu] allocator reserved: %.1f MiB before the run, %.1f MiB after its failure\n",
              held.reserved_bytes / 1048576.0, after.reserved_bytes / 1048576.0);
  EXPECT_LE(after.reserved_bytes, held.reserved_bytes + (uint64_t{64} << 20));

  hog.reset();
  release_cached_device_memory();
  DenseAttention dense;
  GenerationOptions options;
  options.max_new_tokens = 8;
  options.stop_at_eos = false;
  const GenerationResult r = generate(model, "Once upon a time", options, dense);
  EXPECT_EQ(r.generated_ids.size(), 8u);
}

}  // namespace
}  // namespace hipstudio
