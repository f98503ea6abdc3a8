// HiP inside stories15M on CUDA (CUDA kernels) against the CPU float64 reference path (label: gpu).
#include <cmath>
#include <cstdio>
#include <utility>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/model_source.h"
#include "engine/analysis/layer_view.h"
#include "engine/analysis/device_dense_image.h"
#include "engine/analysis/device_locality.h"
#include "engine/analysis/device_trace.h"
#include "engine/generation/generation.h"
#include "engine/backends/hip_attention.h"
#include "engine/model/kv_cache.h"
#include "engine/analysis/paired_analysis.h"
#include "engine/model/transformer.h"
#include "kernels/hip_trace.h"
#include "kernels/oracle.h"
#include "kernels/score_locality.h"
#include "kernels/torch/hip_torch.h"
#include "engine/views/dense_view.h"
#include "tests/engine/hip_test_setup.h"
#include "tests/gpu/require_cuda_kernels.h"

namespace hipstudio {
namespace {

// The shorter prompt keeps the per-step GPU/CPU comparison quick.
const std::string& kStory = testing::kStoryOpening;

HipModelParams params() { return testing::small_hip_params(); }

std::shared_ptr<const Model> load(const char* device, const char* dtype) {
  return load_model(resolve_model_source(""), parse_run_device(device, dtype));
}

// Prefill, then 12 decode steps (3 refreshes, cached steps between them) with the same tokens.
at::Tensor hip_logits(std::shared_ptr<const Model> model, const std::vector<int32_t>& ids, size_t prefill, std::string* note) {
  HipAttention hip(params(), model->config.n_layers);
  Transformer transformer(model, static_cast<int64_t>(ids.size()));
  KVCache cache(model->config, model->run, static_cast<int64_t>(ids.size()));
  std::vector<at::Tensor> rows{transformer.forward({ids.begin(), ids.begin() + prefill}, cache, hip, LogitsFor::AllTokens)};
  for (size_t i = prefill; i < ids.size(); ++i)
    rows.push_back(transformer.forward({ids[i]}, cache, hip, LogitsFor::LastToken, Phase::Decode));
  *note = hip.backend_note();
  return at::cat(rows, 0);
}

TEST(HipModelCuda, Fp32PrefillAndCachedDecodeMatchTheCpuReference) {
  REQUIRE_CUDA_KERNELS();
  auto cpu = load("cpu", "f32");
  auto gpu = load("cuda", "f32");
  const auto ids = cpu->tokenizer->encode(kStory, true);
  std::string cpu_note, gpu_note;
  const at::Tensor a = hip_logits(cpu, ids, ids.size() - 12, &cpu_note);
  const at::Tensor b = hip_logits(gpu, ids, ids.size() - 12, &gpu_note);
  EXPECT_EQ(gpu_note, "HiP CUDA kernels");
  const double diff = (a - b).abs().max().item<double>();
  std::printf("[gpu] HiP stories15M fp32 logits (prefill %zu + 12 decode steps, r_m 4), CUDA kernels vs CPU reference: "
              "max abs diff %.3g\n", ids.size() - 12, diff);
  EXPECT_LE(diff, 1e-3);
}

// The GUI's prefill on CUDA: views of the viewed layer with it, the others' later from the kept
// device tensors and the kernels' masks; and new HiP settings re-run the HiP side alone. Both must
// give what a whole CUDA prefill with those settings gives.
TEST(HipModelCuda, DeferredViewsAndHipRerunEqualWholeCudaPrefills) {
  REQUIRE_CUDA_KERNELS();
  auto model = load("cuda", "f32");
  AnalysisOptions o;
  o.hip = params();
  auto whole = PairedPrefill::run(model, kStory, o, 4);
  AnalysisOptions first = o;
  first.views_only_layer = 3;
  auto part = PairedPrefill::run(model, kStory, first, 4);
  const PairedAnalysis& w = *whole->prompt_result();
  ASSERT_EQ(part->pending_views().size(), w.layers.size() - 1) << "every layer but the viewed one is deferred";
  double max_diff = 0;
  for (int64_t l : part->pending_views()) {
    const LayerViewsResult r = part->layer_views(l);
    const LayerMaskViews* m = w.find_masks(l);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(r.masks.hip.blocks, m->hip.blocks) << "layer " << l;
    EXPECT_EQ(r.masks.oracle.blocks, m->oracle.blocks) << "layer " << l;
    for (size_t h = 0; h < r.quality.heads.size(); ++h) {
      max_diff = std::max(max_diff, std::abs(r.quality.heads[h].recall - w.layers[static_cast<size_t>(l)].heads[h].recall));
      max_diff = std::max(max_diff, std::abs(r.quality.heads[h].out_rel_err - w.layers[static_cast<size_t>(l)].heads[h].out_rel_err));
    }
  }
  std::printf("[gpu] deferred layer views vs the prefill's own: max metric diff %.3g over %zu layers\n", max_diff,
              part->pending_views().size());
  EXPECT_LE(max_diff, 1e-9);

  AnalysisOptions other = o;
  other.hip.hip.k = 16;
  part->rerun_hip(other);
  const PairedAnalysis rerun = part->decode(4, o.hip.refresh_every);
  const PairedAnalysis fresh = run_paired_analysis(model, kStory, [&] {
    AnalysisOptions f = other;
    f.decode_steps = 4;
    return f;
  }());
  EXPECT_EQ(rerun.hip.generated, fresh.hip.generated);
  EXPECT_EQ(rerun.dense.generated, fresh.dense.generated);
  double nll_diff = 0;
  for (size_t i = 0; i < rerun.hip.nll.size(); ++i) nll_diff = std::max(nll_diff, std::abs(rerun.hip.nll[i] - fresh.hip.nll[i]));
  std::printf("[gpu] HiP re-run vs a fresh CUDA run: max HiP nll diff %.3g\n", nll_diff);
  EXPECT_LE(nll_diff, 1e-4);
}

// The Iterations view on CUDA traces with the kernels on the kept device tensors: in fp32 the
// trace (initial nodes, every iteration's branches and survivors, the final mask) and the oracle's
// block scores must be the float64 CPU reference's on the same inputs.
TEST(HipModelCuda, KernelTraceOfAKeptLayerEqualsTheCpuTraceInFp32) {
  REQUIRE_CUDA_KERNELS();
  AnalysisOptions o;
  o.hip = params();
  o.views_only_layer = 2;
  auto prefill = PairedPrefill::run(load("cuda", "f32"), kStory, o, 0);
  const PairedAnalysis& pa = *prefill->prompt_result();
  const LayerInputs* in = pa.find_inputs(2);
  ASSERT_NE(in, nullptr);
  const hip::AttentionInputs host = layer_view(*in);
  const int64_t blocks = (in->tokens + o.hip.hip.b_q - 1) / o.hip.hip.b_q;
  int traced = 0;
  double worst = 0;
  for (int64_t head : {int64_t{0}, in->heads - 1})
    for (int64_t qb : {int64_t{0}, blocks / 2, blocks - 1}) {
      SCOPED_TRACE("head " + std::to_string(head) + " query block " + std::to_string(qb));
      const std::optional<DeviceTrace> dev = trace_on_device(*in, o.hip.hip, head, qb);
      ASSERT_TRUE(dev.has_value()) << "a CUDA run's kept layer was not traced on the device";
      const hip::MaskTrace cpu = hip::trace_block_mask(host, o.hip.hip, head, qb);
      EXPECT_EQ(dev->trace.lo, cpu.lo);
      EXPECT_EQ(dev->trace.hi, cpu.hi);
      EXPECT_EQ(dev->trace.initial_begin, cpu.initial_begin);
      EXPECT_EQ(dev->trace.initial_end, cpu.initial_end);
      ASSERT_EQ(dev->trace.iterations.size(), cpu.iterations.size());
      for (size_t it = 0; it < cpu.iterations.size(); ++it) {
        const auto& a = dev->trace.iterations[it].branches;
        const auto& b = cpu.iterations[it].branches;
        ASSERT_EQ(a.size(), b.size()) << "iteration " << it;
        for (size_t j = 0; j < b.size(); ++j) {
          EXPECT_EQ(a[j].begin, b[j].begin) << "iteration " << it << " branch " << j;
          EXPECT_EQ(a[j].end, b[j].end) << "iteration " << it << " branch " << j;
          EXPECT_EQ(a[j].kept, b[j].kept) << "iteration " << it << " branch " << j;
        }
      }
      EXPECT_EQ(dev->trace.blocks, cpu.blocks);
      const std::vector<double> ref = hip::oracle_block_scores(host, o.hip.hip, head, qb);
      ASSERT_EQ(dev->oracle_scores.size(), ref.size());
      for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(dev->oracle_scores[i] - ref[i]) / (1 + std::abs(ref[i])));
      ++traced;
    }
  std::printf("[gpu] kernel trace vs CPU trace, fp32: %d blocks traced, max oracle score rel diff %.3g\n", traced, worst);
  EXPECT_LE(worst, 1e-9);
}

// Side by side's dense probabilities on CUDA, pooled on the device: cell for cell the CPU image
// (dense_probability_image, engine/views/dense_view.h) of the same kept layer in fp32, unpooled and pooled (16 texels a
// side over the prompt's rows and keys), NaN exactly where no visible key falls.
TEST(HipModelCuda, DeviceDenseImageEqualsTheCpuImageInFp32) {
  REQUIRE_CUDA_KERNELS();
  AnalysisOptions o;
  o.hip = params();
  o.views_only_layer = 1;
  auto prefill = PairedPrefill::run(load("cuda", "f32"), kStory, o, 0);
  const LayerInputs* in = prefill->prompt_result()->find_inputs(1);
  ASSERT_NE(in, nullptr);
  const hip::AttentionInputs host = layer_view(*in);
  double worst = 0;
  hip::AttentionRule windowed;  // a windowed, soft-capped layer's rule on the same inputs
  windowed.window = 24;
  windowed.score.softcap = 3.0;
  for (const hip::AttentionRule& rule : {hip::AttentionRule{}, windowed})
  for (int side : {1024, 16})
    for (int64_t head : {int64_t{0}, in->heads - 1}) {
      SCOPED_TRACE("side " + std::to_string(side) + " head " + std::to_string(head) + " window " + std::to_string(rule.window));
      const std::optional<PooledProbabilities> dev = dense_image_on_device(*in, rule, head, side);
      ASSERT_TRUE(dev.has_value());
      const DenseImage cpu = dense_probability_image(host, rule, head, side);
      ASSERT_EQ(dev->rows, cpu.rows);
      ASSERT_EQ(dev->cols, cpu.cols);
      for (size_t i = 0; i < cpu.values.size(); ++i) {
        ASSERT_EQ(std::isnan(dev->values[i]), std::isnan(cpu.values[i])) << "cell " << i;
        if (!std::isnan(cpu.values[i])) worst = std::max(worst, std::abs(double(dev->values[i]) - double(cpu.values[i])));
      }
    }
  std::printf("[gpu] device dense image vs CPU image, fp32: max abs diff %.3g\n", worst);
  EXPECT_LE(worst, 1e-6);
}

// Score locality on CUDA: the sampled query rows' scores and every statistic come from the device;
// in fp32 they must be the float64 reference's on the host copy of the same layer.
TEST(HipModelCuda, DeviceLocalityEqualsTheReferenceInFp32) {
  REQUIRE_CUDA_KERNELS();
  AnalysisOptions o;
  o.hip = params();
  o.views_only_layer = 4;
  auto prefill = PairedPrefill::run(load("cuda", "f32"), kStory, o, 0);
  const LayerInputs* in = prefill->prompt_result()->find_inputs(4);
  ASSERT_NE(in, nullptr);
  const hip::AttentionInputs host = layer_view(*in);
  std::vector<int64_t> queries;
  for (int64_t i = in->tokens / 2; i < in->tokens; i += 3) queries.push_back(i);
  hip::LocalityParams lp;
  lp.bins = 20;
  lp.deltas = {1, 2, 5, 9};
  double worst = 0;
  for (int64_t head : {int64_t{0}, in->heads - 1}) {
    const auto dev = score_locality_on_device(*in, head, queries, lp);
    ASSERT_TRUE(dev.has_value());
    const hip::ScoreLocality ref = hip::score_locality(host, o.hip.hip, head, queries, lp);
    ASSERT_EQ(dev->deltas.size(), ref.deltas.size());
    for (size_t i = 0; i < ref.deltas.size(); ++i) {
      EXPECT_EQ(dev->deltas[i].pairs, ref.deltas[i].pairs);
      worst = std::max({worst, std::abs(dev->deltas[i].mean - ref.deltas[i].mean),
                        std::abs(dev->deltas[i].stddev - ref.deltas[i].stddev),
                        std::abs(dev->deltas[i].kl_to_normal - ref.deltas[i].kl_to_normal)});
      EXPECT_EQ(dev->deltas[i].counts, ref.deltas[i].counts) << "head " << head << " Delta " << ref.deltas[i].delta;
    }
  }
  std::printf("[gpu] locality computed on the device vs the reference, fp32: max mean/std/KL diff %.3g\n", worst);
  EXPECT_LE(worst, 1e-9);
}

TEST(HipModelCuda, Bf16AnalysisMatchesCpuMetricsWithinBf16Tolerance) {
  REQUIRE_CUDA_KERNELS();
  AnalysisOptions o;
  o.hip = params();
  o.decode_steps = 8;
  PairedAnalysis cpu = run_paired_analysis(load("cpu", "f32"), kStory, o);
  PairedAnalysis gpu = run_paired_analysis(load("cuda", "bf16"), kStory, o);
  double cpu_recall = 0, gpu_recall = 0;
  int n = 0;
  for (size_t l = 0; l < cpu.layers.size(); ++l)
    for (size_t h = 0; h < cpu.layers[l].heads.size(); ++h) {
      cpu_recall += cpu.layers[l].heads[h].recall;
      gpu_recall += gpu.layers[l].heads[h].recall;
      ++n;
    }
  std::printf("[gpu] analysis CPU f32 vs CUDA bf16: dense ppl %.4f / %.4f, HiP ppl %.4f / %.4f, KL %.4f / %.4f, "
              "mean recall %.3f / %.3f, refreshes %lld / %lld\n",
              cpu.dense.ppl, gpu.dense.ppl, cpu.hip.ppl, gpu.hip.ppl, cpu.kl, gpu.kl, cpu_recall / n, gpu_recall / n,
              static_cast<long long>(cpu.mask_refreshes), static_cast<long long>(gpu.mask_refreshes));
  EXPECT_NEAR(gpu.dense.ppl / cpu.dense.ppl, 1.0, 0.02);
  EXPECT_NEAR(gpu.hip.ppl / cpu.hip.ppl, 1.0, 0.03);
  EXPECT_NEAR(gpu_recall / n, cpu_recall / n, 0.05);
  EXPECT_EQ(gpu.mask_refreshes, cpu.mask_refreshes);

  // The kept inputs stay on the device in the run's dtype (nothing on the host until a view asks);
  // copied out, they are the CPU run's Q/K/V within bf16 rounding.
  ASSERT_EQ(gpu.inputs.size(), cpu.inputs.size());
  for (size_t i = 0; i < gpu.inputs.size(); ++i) {
    const LayerInputsSource* source = gpu.inputs[i].source();
    ASSERT_NE(source, nullptr) << "layer " << gpu.inputs[i].layer;
    EXPECT_EQ(source->location().rfind("cuda", 0), 0u) << source->location();
    EXPECT_NE(source->location().find("BFloat16"), std::string::npos) << source->location();
    EXPECT_EQ(cpu.inputs[i].source(), nullptr);
    const LayerInputArrays& g = gpu.inputs[i].host();
    const LayerInputArrays& c = cpu.inputs[i].host();
    for (const auto& [gv, cv] : {std::pair{&g.q, &c.q}, std::pair{&g.k, &c.k}, std::pair{&g.v, &c.v}}) {
      ASSERT_EQ(gv->size(), cv->size());
      double diff = 0, norm = 0;
      for (size_t j = 0; j < cv->size(); ++j) {
        diff += ((*gv)[j] - (*cv)[j]) * double((*gv)[j] - (*cv)[j]);
        norm += (*cv)[j] * double((*cv)[j]);
      }
      EXPECT_LT(std::sqrt(diff / norm), 0.05) << "layer " << gpu.inputs[i].layer;
    }
  }
}

}  // namespace
}  // namespace hipstudio
