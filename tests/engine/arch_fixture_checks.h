#pragma once
// The checks every backend's architecture suite runs on each fixture (arch_fixture_cases.h), once,
// with the device as a parameter: the CPU suite (arch_fixtures_test.cpp) and the CUDA suite
// (tests/gpu/arch_fixtures_cuda_test.cpp) each name their ArchDevice row and call these.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backends/hip_attention.h"
#include "tests/engine/arch_fixture_cases.h"

namespace hipstudio::testing {

// One device's row: where it runs and how closely each check must hold there.
struct ArchDevice {
  std::string device;                    // "cpu" or "cuda"
  std::vector<bool> decode_graphs;       // decode paths checked: {true} on the CPU (no graphs there), eager and graphs on CUDA
  double nll_tol = 1e-4;                 // float32 per-token NLL against transformers'
  double chunked_vs_one_pass = 0;        // 40-token chunked prefill against one pass (0: not checked)
  bool chunked_vs_transformers = false;  // the chunked prefill against transformers' logits (1e-4)
  bool greedy_recompute_vs_transformers = false;  // longrope: the per-step recompute reproduces transformers' tokens
  double batched_gap = 1e-5;             // batched decode steps against single-sequence steps
  std::vector<std::string> half_dtypes;  // reduced precisions whose NLL is checked
  double half_bound_factor = 2.0;        // times transformers' own bf16 distance (bf16_nll_bound)
  bool half_decode = false;              // the reduced precisions' decode path too
  double hip_tol = 1e-5;                 // HiP (budget covering the context) against dense, prefill logits
  bool hip_counts_calls = false;         // the HiP prefill's layer calls counted, 8 greedy tokens equal dense's
  bool hip_decode_logits = false;        // the HiP decode path's logits against dense's (1e-4)
};

inline ArchDevice cpu_arch_device() {
  ArchDevice d;
  d.device = "cpu";
  d.decode_graphs = {true};
  d.chunked_vs_one_pass = 1e-5;
  d.greedy_recompute_vs_transformers = true;
  d.half_dtypes = {"bf16"};
  d.hip_counts_calls = true;
  return d;
}

inline ArchDevice cuda_arch_device() {
  ArchDevice d;
  d.device = "cuda";
  d.decode_graphs = {false, true};
  d.nll_tol = 1e-3;
  d.chunked_vs_transformers = true;
  d.batched_gap = 1e-4;
  // The fused kernels round at other points than the CPU's ops; f16, 3 mantissa bits finer, sits
  // well inside the bound.
  d.half_dtypes = {"bf16", "f16"};
  d.half_bound_factor = 2.5;
  d.half_decode = true;
  d.hip_tol = 1e-4;
  d.hip_decode_logits = true;
  return d;
}

// float32 prefill logits within 1e-4 of transformers', the NLL within d.nll_tol; chunked prefill.
inline void check_float32_prefill(const ArchFixture& f, const ArchDevice& d) {
  const auto model = load_arch_fixture_model(f, d.device, "f32");
  DenseAttention dense;
  const at::Tensor logits = arch_prompt_logits(model, f.ids, dense);
  ASSERT_EQ(logits.sizes(), f.logits.sizes());
  EXPECT_LE((logits - f.logits).abs().max().item<double>(), 1e-4) << f.name;
  EXPECT_LE(max_abs_diff(arch_nll(logits, f.ids), f.nll_f32), d.nll_tol) << f.name;
  // 40-token chunks: each later chunk starts inside the previous chunk's window (W = 24 here).
  const at::Tensor chunked = arch_prompt_logits(model, f.ids, dense, 40);
  if (d.chunked_vs_one_pass > 0) {
    EXPECT_LE((logits - chunked).abs().max().item<double>(), d.chunked_vs_one_pass) << f.name;
  }
  if (d.chunked_vs_transformers) {
    EXPECT_LE((chunked - f.logits).abs().max().item<double>(), 1e-4) << f.name << ": chunked prefill";
  }
}

// 48 positions prefilled, the other 48 one decode step each (past the window of 24), within 1e-4.
inline void check_float32_decode(const ArchFixture& f, const ArchDevice& d) {
  const auto model = load_arch_fixture_model(f, d.device, "f32");
  DenseAttention dense;
  for (const bool graphs : d.decode_graphs) {
    const at::Tensor decoded = arch_decode_logits(model, f.ids, 48, dense, graphs);
    EXPECT_LE((decoded - f.logits).abs().max().item<double>(), 1e-4) << f.name << (graphs ? ": graphs" : ": eager");
  }
}

// 32 greedy tokens through the KV cache identical to transformers'. Where transformers switched
// longrope factors mid-run, the cache's steps equal a recompute with the cache's one table.
inline void check_float32_greedy(const ArchFixture& f, const ArchDevice& d) {
  const auto model = load_arch_fixture_model(f, d.device, "f32");
  DenseAttention dense;
  const int64_t steps = static_cast<int64_t>(f.greedy.size()), prompt = static_cast<int64_t>(f.greedy_prompt.size());
  const bool switches = arch_rope_depends_on_length(model->config, prompt, prompt + steps);
  if (switches && d.greedy_recompute_vs_transformers) {
    EXPECT_EQ(arch_greedy_recompute(model, f.greedy_prompt, steps, dense), f.greedy) << f.name;
  }
  for (const bool graphs : d.decode_graphs) {
    const std::vector<int32_t> cached = arch_greedy(model, f.greedy_prompt, steps, dense, graphs);
    if (switches) {
      EXPECT_EQ(cached, arch_greedy_recompute(model, f.greedy_prompt, steps, dense, prompt + steps)) << f.name;
    } else {
      EXPECT_EQ(cached, f.greedy) << f.name << (graphs ? ": graphs" : ": eager");
    }
  }
}

inline void check_batched_decode(const ArchFixture& f, const ArchDevice& d) {
  EXPECT_LE(arch_batched_decode_gap(load_arch_fixture_model(f, d.device, "f32"), f), d.batched_gap) << f.name;
}

// Reduced-precision NLL against transformers' float32 NLL within bf16_nll_bound(f, factor).
inline void check_half_precision_nll(const ArchFixture& f, const ArchDevice& d) {
  for (const std::string& dtype : d.half_dtypes) {
    const auto model = load_arch_fixture_model(f, d.device, dtype);
    DenseAttention dense;
    const double bound = bf16_nll_bound(f, d.half_bound_factor);
    const std::vector<double> prefill = arch_nll(arch_prompt_logits(model, f.ids, dense), f.ids);
    EXPECT_LE(max_abs_diff(prefill, f.nll_f32), bound) << f.name << " " << dtype;
    if (!d.half_decode) continue;
    const std::vector<double> decoded = arch_nll(arch_decode_logits(model, f.ids, 48, dense), f.ids);
    EXPECT_LE(max_abs_diff(decoded, f.nll_f32), bound) << f.name << " " << dtype << ": decode graphs";
  }
}

// HiP with a budget covering the context equals dense, replacing only the full-attention layers
// (a windowed layer keeps its window attention).
inline void check_hip_covering_budget_equals_dense(const ArchFixture& f, const ArchDevice& d) {
  const auto model = load_arch_fixture_model(f, d.device, "f32");
  HipModelParams p;
  p.hip.k = 128;  // >= the 96 positions: every block is selected
  p.hip.b_q = 8;
  p.hip.b_k = 2;
  p.dense_layers = 0;
  HipAttention hip(p, model->config.n_layers);
  int64_t hip_calls = 0, dense_calls = 0;
  hip.set_observer([&](const HipLayerEvent& e) {
    (e.dense ? dense_calls : hip_calls) += 1;
    EXPECT_EQ(e.dense, model->config.window(e.layer) > 0) << f.name << " layer " << e.layer;
  });
  DenseAttention dense;
  const at::Tensor dl = arch_prompt_logits(model, f.ids, dense, 32);
  const at::Tensor hl = arch_prompt_logits(model, f.ids, hip, 32);
  EXPECT_LE((dl - hl).abs().max().item<double>(), d.hip_tol) << f.name << " (" << hip.backend_note() << ")";
  if (d.hip_counts_calls) {
    EXPECT_EQ(hip_calls, 3 * model->config.full_attention_layers()) << f.name;
    EXPECT_EQ(hip_calls + dense_calls, 3 * model->config.n_layers) << f.name;
    // The cache's decode steps too (cached masks, dense tail).
    EXPECT_EQ(arch_greedy(model, f.greedy_prompt, 8, hip), arch_greedy(model, f.greedy_prompt, 8, dense)) << f.name;
  }
  if (d.hip_decode_logits) {
    hip.set_observer({});  // the decode steps through the graphs where the model's maths allows them
    const at::Tensor hd = arch_decode_logits(model, f.ids, 48, hip);
    const at::Tensor dd = arch_decode_logits(model, f.ids, 48, dense);
    EXPECT_LE((dd - hd).abs().max().item<double>(), 1e-4) << f.name << ": decode";
  }
}

}  // namespace hipstudio::testing
