// The memory estimate, line by line, against what the engine really allocates (the loaded weights,
// a real KV cache, a real paired run's recorded data), the refusal message, and the out-of-memory
// boundary that turns a failed allocation into an InputError and leaves the process usable.
#include <new>
#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/backends/attention_backend.h"
#include "engine/analysis/context_plan.h"
#include "engine/generation/generation.h"
#include "engine/analysis/host_inputs.h"
#include "engine/model/kv_cache.h"
#include "engine/analysis/memory_estimate.h"
#include "engine/runtime/out_of_memory.h"
#include "engine/analysis/paired_analysis.h"
#include "kernels/mask_reference.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/hip_test_setup.h"

namespace hipstudio {
namespace {

using testing::default_model;

const RunDevice kCpu = {c10::Device(c10::kCPU), c10::kFloat};

uint64_t tensor_bytes(const at::Tensor& t) { return t.defined() ? static_cast<uint64_t>(t.numel() * t.element_size()) : 0; }

std::string refusal_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(MemoryEstimate, WeightsLineEqualsTheLoadedTensors) {
  const Model& m = *default_model();
  uint64_t loaded = tensor_bytes(m.weights.embedding) + tensor_bytes(m.weights.final_norm);
  if (!m.weights.classifier.is_same(m.weights.embedding)) loaded += tensor_bytes(m.weights.classifier);
  for (const LayerWeights& l : m.weights.layers)
    for (const at::Tensor* t : {&l.attn_norm, &l.wqkv, &l.bqkv, &l.wo, &l.mlp_norm, &l.w13, &l.w2}) loaded += tensor_bytes(*t);
  EXPECT_EQ(weight_bytes(m.config, c10::kFloat), loaded);
  // bf16 halves the matrices but not the float32 norms.
  const uint64_t norms = (2 * m.config.n_layers + 1) * m.config.dim * 4;
  EXPECT_EQ(weight_bytes(m.config, c10::kBFloat16) - norms, (loaded - norms) / 2);
  const MemoryEstimate e = estimate_run_memory(m.config, kCpu, {10, 5, 10});
  EXPECT_EQ(e.bytes(memory_line::kWeights), loaded);
  // Loaded already: shown, never counted as still to allocate.
  EXPECT_EQ(e.needed(MemoryPlace::Host) + loaded,
            [&] {
              uint64_t all = 0;
              for (const MemoryLine& l : e.lines) all += l.bytes;
              return all;
            }());
}

TEST(MemoryEstimate, KvCacheLineEqualsARealCacheAndTheFormula) {
  const ModelConfig& c = default_model()->config;
  const int64_t prompt = 37, fresh = 11, T = prompt + fresh;
  const MemoryEstimate e = estimate_run_memory(c, kCpu, {prompt, fresh, prompt});
  EXPECT_EQ(e.bytes(memory_line::kKvCache), uint64_t(2 * c.n_layers * c.n_kv_heads * T * c.head_dim * 4));
  KVCache cache(c, kCpu, T);
  uint64_t real = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) real += tensor_bytes(cache.keys(l, T)) + tensor_bytes(cache.values(l, T));
  EXPECT_EQ(e.bytes(memory_line::kKvCache), real);

  // Grouped-query attention and bf16 scale it as the formula says; an analysis holds two caches.
  ModelConfig gqa = c;
  gqa.n_layers = 32, gqa.n_heads = 32, gqa.n_kv_heads = 8, gqa.head_dim = 128;
  const RunDevice bf16 = {c10::Device(c10::kCPU), c10::kBFloat16};
  EXPECT_EQ(estimate_run_memory(gqa, bf16, {4000, 96, 512}).bytes(memory_line::kKvCache), uint64_t(2) * 32 * 8 * 4096 * 128 * 2);
  AnalysisMemoryShape extras;
  RunMemoryShape paired{4000, 96, 4000, true, &extras};
  EXPECT_EQ(estimate_run_memory(gqa, bf16, paired).bytes(memory_line::kKvCache), uint64_t(2) * 2 * 32 * 8 * 4096 * 128 * 2);
}

TEST(MemoryEstimate, CpuScoresGrowWithChunkTimesContext) {
  const ModelConfig& c = default_model()->config;
  // float32 on the CPU: float64 scores [heads, chunk, keys], two alive at a time (dense_attention.cpp).
  const MemoryEstimate e = estimate_run_memory(c, kCpu, {200, 50, 128});
  EXPECT_EQ(e.bytes(memory_line::kScores), uint64_t(2 * c.n_heads * 128 * 250 * 8));
  EXPECT_EQ(e.bytes(memory_line::kLogits), uint64_t(c.vocab_size * 4));  // the last row only
  EXPECT_GT(e.bytes(memory_line::kActivations), uint64_t(128 * c.hidden_dim * 4 * 2));  // at least gate/up
}

TEST(MemoryEstimate, AnalysisLinesAgreeWithARealPairedRun) {
  auto model = default_model();
  const ModelConfig& c = model->config;
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.decode_steps = 6;
  const PairedAnalysis a = run_paired_analysis(model, testing::kStoryOpening, o);
  const int64_t n = static_cast<int64_t>(a.prompt_ids.size());

  AnalysisMemoryShape extras;
  RunMemoryShape shape = paired_analysis_shape(*model, n, o, extras);  // what the run planned with
  EXPECT_EQ(extras.kept_layers, c.n_layers);
  extras.capture = true;
  extras.capture_masks = true;
  const MemoryEstimate e = estimate_run_memory(c, kCpu, shape);

  // The kept Q/K/V (host arrays on the CPU) are exactly PairedAnalysis::inputs, the masks one per kept layer.
  ASSERT_EQ(a.masks.size(), static_cast<size_t>(c.n_layers));
  uint64_t inputs = 0;
  for (const LayerInputs& in : a.inputs) inputs += (in.host().q.size() + in.host().k.size() + in.host().v.size()) * sizeof(float);
  EXPECT_EQ(e.bytes(memory_line::kKeptQkv), inputs);

  // The access streams are bounded by the estimate (every recorded key position is an int32).
  uint64_t streams = 0;
  for (const auto& v : a.access.mask_keys) streams += v.size() * 4;
  for (const auto& v : a.access.sparse_keys) streams += v.size() * 4;
  EXPECT_GT(streams, 0u);
  EXPECT_LE(streams, e.bytes(memory_line::kAccessStreams));

  // The masks of one layer as the kernels compute them (HiP's; oracle and random share its shape),
  // plus the two recall tables, times the layers.
  const LayerInputs& in = a.inputs.back();
  const at::Tensor q = at::from_blob(const_cast<float*>(in.host().q.data()), {in.heads, in.tokens, in.dim});
  const at::Tensor k = at::from_blob(const_cast<float*>(in.host().k.data()), {in.kv_heads, in.tokens, in.dim});
  const HostAttentionInputs host(q, k, k);
  const hip::MaskResult mask = hip::estimate_masks_reference(host.view, o.hip.hip).mask;
  const uint64_t one = mask.blocks.size() * 4 + mask.counts.size() * 4 + mask.iterations.size() * 4 +
                       mask.branches.size() * 8 + mask.dense_from.size() * 8;
  const uint64_t recall_tables = 2 * static_cast<uint64_t>(mask.heads * mask.query_blocks) * 8;
  EXPECT_EQ(e.bytes(memory_line::kMasks), static_cast<uint64_t>(c.n_layers) * (3 * one + recall_tables));

  // The capture's archive holds the masks and the inputs again; without the inputs it shrinks by them.
  EXPECT_GE(e.bytes(memory_line::kCaptureImage), e.bytes(memory_line::kMasks) + inputs);
  extras.keep_inputs = false;
  EXPECT_EQ(estimate_run_memory(c, kCpu, shape).bytes(memory_line::kCaptureImage) + inputs, e.bytes(memory_line::kCaptureImage));
}

TEST(MemoryEstimate, OnlyTheAskedLayersKeepInputsAndMasks) {
  auto model = default_model();
  AnalysisOptions o;
  o.hip = testing::small_hip_params();
  o.keep_all_layers = false;
  o.keep_layers = {1, 4};
  const PairedAnalysis a = run_paired_analysis(model, testing::kStoryOpening, o);
  ASSERT_EQ(a.inputs.size(), 2u);
  ASSERT_EQ(a.masks.size(), 2u);
  EXPECT_EQ(a.inputs[0].layer, 1);
  EXPECT_EQ(a.inputs[1].layer, 4);
  EXPECT_EQ(a.masks[1].layer, 4);
  EXPECT_EQ(a.layers.size(), static_cast<size_t>(model->config.n_layers));  // every layer's numbers all the same
  AnalysisMemoryShape extras;
  const MemoryEstimate e =
      estimate_run_memory(model->config, kCpu, paired_analysis_shape(*model, static_cast<int64_t>(a.prompt_ids.size()), o, extras));
  uint64_t inputs = 0;
  for (const LayerInputs& in : a.inputs) inputs += (in.host().q.size() + in.host().k.size() + in.host().v.size()) * sizeof(float);
  EXPECT_EQ(e.bytes(memory_line::kKeptQkv), inputs);
}

// The bar: a 128k-token prompt on a Llama-3.1-8B-shaped model, bf16 on an 80 GB GPU with
// 128 GB of host memory, is accepted for `analyze` and for a capture of two layers' inputs.
TEST(MemoryEstimate, An8BModelAt128kFitsAn80GBGpuAnd128GBHost) {
  ModelConfig c = default_model()->config;
  c.n_layers = 32, c.n_heads = 32, c.n_kv_heads = 8, c.head_dim = 128, c.dim = 4096, c.hidden_dim = 14336;
  c.vocab_size = 128256, c.max_seq_len = 131072;
  const RunDevice gpu{c10::Device(c10::kCUDA, 0), c10::kBFloat16};
  AnalysisMemoryShape extras;
  extras.hip.hip.k = 512;
  extras.hip.hip.b_q = 64;
  RunMemoryShape shape{131040, 16, 16384, false, &extras};
  const uint64_t weights = weight_bytes(c, c10::kBFloat16);
  FreeMemory h100{(uint64_t{80} << 30) - weights - (uint64_t{2} << 30), uint64_t{128} << 30};  // 2 GiB for the CUDA context
  // LibTorch 1.13 (this machine's) has no fused attention, so its dense baseline would hold the
  // score matrix: the device side is checked where the fused path exists (LibTorch 2, the GPU's).
  if (!DenseAttention::fused_on(gpu.device)) h100.device = 0;
  EXPECT_NO_THROW(plan_run(c, gpu, shape, 0, h100));
  extras.kept_layers = 2;
  extras.capture = extras.capture_masks = true;
  extras.traced_blocks = 2;
  EXPECT_NO_THROW(plan_run(c, gpu, shape, 0, h100));
  const MemoryEstimate e = estimate_run_memory(c, gpu, shape);
  EXPECT_LE(e.needed(MemoryPlace::Host), uint64_t{24} << 30) << "the issue's host RSS bar";
  // The kept layers' Q/K/V stay on the device in bf16; only writing the capture copies them to the
  // host, as float32.
  const uint64_t qkv = uint64_t{32 + 2 * 8} * 131040 * 128;
  EXPECT_EQ(e.bytes(memory_line::kKeptQkv), 2 * qkv * 2);
  EXPECT_EQ(e.bytes(memory_line::kHostQkvCopies), 2 * qkv * 4);
  int kept_on_device = 0;
  for (const MemoryLine& line : e.lines) kept_on_device += line.name == memory_line::kKeptQkv && line.place == MemoryPlace::Device;
  EXPECT_EQ(kept_on_device, 1);
  // The residual streams: both sides', the viewed-layer-first one and the HiP side's kept entry
  // streams, a bound whatever l_d a re-run picks (a stream a layer up to l_d would be 31 at l_d 31).
  const uint64_t stream = uint64_t{131040} * 4096 * 2;
  for (const int64_t ld : {int64_t{0}, int64_t{3}, int64_t{31}}) {
    extras.hip.dense_layers = ld;
    EXPECT_EQ(estimate_run_memory(c, gpu, shape).bytes(memory_line::kHidden), (3 + kKeptHipEntryStreams) * stream) << "l_d " << ld;
  }
  // The old plan (all logits and every layer's Q/K/V on the host) needed about 200 GB there.
  extras.kept_layers = 32;
  EXPECT_GT(estimate_run_memory(c, gpu, shape).needed(MemoryPlace::Host), uint64_t{64} << 30);
}

TEST(MemoryEstimate, RefusalNamesEveryLineTheFreeFigureAndTheWaysOut) {
  ModelConfig big = default_model()->config;
  big.n_layers = 32, big.n_heads = 32, big.n_kv_heads = 8, big.head_dim = 128, big.max_seq_len = 1 << 20;
  const uint64_t free_bytes = uint64_t{512} << 20;
  RunMemoryShape shape{100'000, 64, 0, false, nullptr};
  const std::string m = refusal_text([&] { plan_run(big, kCpu, shape, 0, FreeMemory{0, free_bytes}); });
  ASSERT_FALSE(m.empty()) << "100k tokens of a 32-layer model fit in 512 MiB?";
  const MemoryEstimate e = estimate_run_memory(big, kCpu, {100'000, 64, kDefaultPrefillChunk});
  for (const char* line : {memory_line::kKvCache, memory_line::kActivations, memory_line::kScores})
    EXPECT_NE(m.find(std::string(line) + " " + mib_text(e.bytes(line))), std::string::npos) << line << " in: " << m;
  EXPECT_NE(m.find(mib_text(uint64_t(2) * 32 * 8 * 100'064 * 128 * 4)), std::string::npos) << m;  // KV, independently
  EXPECT_NE(m.find("only 512.0 MiB is free"), std::string::npos) << m;
  EXPECT_NE(m.find("needs about " + mib_text(e.needed(MemoryPlace::Host))), std::string::npos) << m;
  for (const char* fix : {"shorter prompt", "100000 tokens now", "--max-tokens", "--dtype bf16"})
    EXPECT_NE(m.find(fix), std::string::npos) << fix << " in: " << m;
  EXPECT_EQ(m.find("--device cpu"), std::string::npos) << "already on the CPU: " << m;

  // An analysis names --decode and, for a capture, the traces and views.
  AnalysisMemoryShape extras;
  extras.capture = true;
  RunMemoryShape paired{100'000, 8, 100'000, true, &extras};
  const std::string a = refusal_text([&] { plan_run(big, kCpu, paired, 0, FreeMemory{0, free_bytes}); });
  EXPECT_NE(a.find("--decode"), std::string::npos) << a;
  EXPECT_NE(a.find("--trace"), std::string::npos) << a;
}

TEST(MemoryEstimate, ARunThatFitsIsNotRefusedAndTheMarginDecides) {
  const ModelConfig& c = default_model()->config;
  RunMemoryShape shape{200, 56, 0, false, nullptr};
  const ContextPlan plan = plan_run(c, kCpu, shape, 0, FreeMemory{0, uint64_t{1} << 30});
  EXPECT_EQ(plan.capacity, 256);
  EXPECT_EQ(plan.bytes_needed, plan.memory.needed(MemoryPlace::Host));
  // Exactly the estimate plus the 10% margin fits; a little less is refused.
  const uint64_t need = plan.bytes_needed;
  const uint64_t enough = static_cast<uint64_t>(static_cast<double>(need) * kHeadroom) + 1;
  EXPECT_NO_THROW(plan_run(c, kCpu, shape, 0, FreeMemory{0, enough}));
  EXPECT_THROW(plan_run(c, kCpu, shape, 0, FreeMemory{0, need}), InputError);
  // The real machine: stories15M's 256 tokens fit in whatever a test machine has free.
  EXPECT_GT(host_available_bytes(), need);
  EXPECT_NO_THROW(plan_context(c, kCpu, 200, 56));
}

TEST(MemoryEstimate, ContextIsCheckedBeforeMemory) {
  const ModelConfig& c = default_model()->config;
  const std::string m = refusal_text([&] { plan_run(c, kCpu, {250, 10, 0, false, nullptr}, 0, FreeMemory{0, 1}); });
  EXPECT_NE(m.find("context is 256 tokens"), std::string::npos) << m;
}

// Real LibTorch allocation failures (an impossible CPU allocation) and std::bad_alloc become an
// InputError naming the run and the fix, and the next run in the same process works.
TEST(OutOfMemory, AllocationFailureBecomesAnInputErrorAndTheNextRunWorks) {
  // (scripts/sanitize sets allocator_may_return_null=1 so that AddressSanitizer fails it like malloc.)
  const std::string huge = refusal_text([] {
    guard_out_of_memory(kCpu, "the test run", [] { return at::empty({int64_t{1} << 48}, at::kFloat); });  // 1 PiB
  });
  EXPECT_NE(huge.find("the test run ran out of memory on cpu"), std::string::npos) << huge;
  EXPECT_NE(huge.find("shorter prompt"), std::string::npos) << huge;
  const std::string bad_alloc = refusal_text([] { guard_out_of_memory(kCpu, "x", []() -> int { throw std::bad_alloc(); }); });
  EXPECT_NE(bad_alloc.find("host allocation failed"), std::string::npos) << bad_alloc;
  // Other errors pass through untouched.
  EXPECT_THROW(guard_out_of_memory(kCpu, "x", []() -> int { throw std::logic_error("bug"); }), std::logic_error);

  DenseAttention dense;
  GenerationOptions options;
  options.max_new_tokens = 4;
  EXPECT_EQ(generate(default_model(), "Once upon a time", options, dense).generated_ids.size(), 4u);
}

}  // namespace
}  // namespace hipstudio
