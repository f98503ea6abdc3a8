#pragma once
// The architecture fixtures (tests/fixtures/archs/<variant>/, written by scripts/dev/arch_fixtures.py
// with transformers) and the checks both the CPU suite (arch_fixtures_test.cpp) and the CUDA suite
// (tests/gpu/arch_fixtures_cuda_test.cpp) run on them: one table of cases for every backend.
// HIPSTUDIO_ARCH_FIXTURES, when set, names another directory of the same layout (the GPU machine
// points it at checkpoints the script has just made).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "captures/npy.h"
#include "engine/formats/model_source.h"
#include "engine/backends/attention_backend.h"
#include "engine/generation/batched_decode.h"
#include "engine/runtime/device.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "engine/model/transformer.h"

namespace hipstudio::testing {

inline std::string arch_fixture_root() {
  const char* env = std::getenv("HIPSTUDIO_ARCH_FIXTURES");
  return env && *env ? std::string(env) : std::string(HIPSTUDIO_SOURCE_DIR) + "/tests/fixtures/archs";
}

// The variants (sub-directories holding a reference.json), sorted; empty when the root is missing.
inline std::vector<std::string> arch_fixture_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(arch_fixture_root(), error))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "reference.json"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct ArchFixture {
  std::string name, dir;
  std::vector<int32_t> ids;            // (96) the sequence transformers scored
  std::vector<double> nll_f32, nll_bf16;  // (95) per-token NLL of ids[1:]
  at::Tensor logits;                   // [96, vocab] float32, transformers' float32 logits
  std::vector<int32_t> greedy_prompt;  // (48)
  std::vector<int32_t> greedy;         // (32) the tokens transformers' greedy decoding appended
};

inline ArchFixture read_arch_fixture(const std::string& name) {
  ArchFixture f;
  f.name = name;
  f.dir = arch_fixture_root() + "/" + name;
  std::ifstream in(f.dir + "/reference.json");
  const nlohmann::json ref = nlohmann::json::parse(in);
  f.ids = ref.at("ids").get<std::vector<int32_t>>();
  f.nll_f32 = ref.at("nll_f32").get<std::vector<double>>();
  f.nll_bf16 = ref.at("nll_bf16").get<std::vector<double>>();
  f.greedy_prompt = ref.at("greedy_prompt").get<std::vector<int32_t>>();
  f.greedy = ref.at("greedy_f32").get<std::vector<int32_t>>();
  const captures::NpyArray logits = captures::read_npy(f.dir + "/" + ref.at("logits_f32").get<std::string>());
  logits.require_rank(2, "[T, vocab]");
  f.logits = at::from_blob(const_cast<float*>(logits.data<float>()), {logits.shape[0], logits.shape[1]}, at::kFloat).clone();
  return f;
}

inline std::shared_ptr<const Model> load_arch_fixture_model(const ArchFixture& f, const std::string& device,
                                                            const std::string& dtype) {
  return load_model(resolve_model_source(f.dir), parse_run_device(device, dtype));
}

// Float32 logits [T, vocab] on the CPU of every position of `ids`, prefilled in chunks of `chunk`
// tokens (0: one pass), through `attention`.
inline at::Tensor arch_prompt_logits(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& ids,
                                     AttentionBackend& attention, size_t chunk = 0) {
  const int64_t T = static_cast<int64_t>(ids.size());
  Transformer transformer(model, T);
  KVCache cache(model->config, model->run, T);
  if (chunk == 0) chunk = ids.size();
  std::vector<at::Tensor> parts;
  for (size_t a = 0; a < ids.size(); a += chunk) {
    const size_t b = std::min(ids.size(), a + chunk);
    parts.push_back(transformer.forward({ids.begin() + static_cast<std::ptrdiff_t>(a), ids.begin() + static_cast<std::ptrdiff_t>(b)},
                                        cache, attention, LogitsFor::AllTokens));
  }
  return at::cat(parts, 0);
}

// Float32 logits [T, vocab] on the CPU of every position of `ids` where the first `prefix` tokens
// are one prefill and every later token a decode step through the cache (Phase::Decode: the decode
// graphs on CUDA unless `graphs` is false): the decode path, teacher-forced.
inline at::Tensor arch_decode_logits(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& ids,
                                     size_t prefix, AttentionBackend& attention, bool graphs = true) {
  const int64_t T = static_cast<int64_t>(ids.size());
  Transformer transformer(model, T);
  transformer.set_decode_graphs(graphs);
  KVCache cache(model->config, model->run, T);
  std::vector<at::Tensor> parts{transformer.forward({ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prefix)}, cache,
                                                    attention, LogitsFor::AllTokens)};
  for (size_t t = prefix; t < ids.size(); ++t)
    parts.push_back(transformer.forward({ids[t]}, cache, attention, LogitsFor::LastToken, Phase::Decode));
  return at::cat(parts, 0);
}

// Per-token NLL of ids[1:] from logits [T, vocab] (float64 log-softmax).
inline std::vector<double> arch_nll(const at::Tensor& logits, const std::vector<int32_t>& ids) {
  const at::Tensor lp = at::log_softmax(logits.to(at::kDouble), -1);
  std::vector<double> nll;
  for (size_t t = 0; t + 1 < ids.size(); ++t) nll.push_back(-lp[static_cast<int64_t>(t)][ids[t + 1]].item<double>());
  return nll;
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = a.size() == b.size() ? 0.0 : 1e300;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// The bound on a bf16 run's per-token NLL distance from transformers' float32 NLL: `factor` times
// the distance of transformers' own bf16 run (the CPU's runs sit within 1.6 times it) (as flash-attention's tests judge a kernel's error against
// a plain implementation's in the same dtype). These random checkpoints (weights of std 0.15) move
// ~0.05-0.23 nats in bf16 whoever rounds; the rounding points differ (transformers rounds before
// the norm weight's multiply, this engine after), so the two bf16 runs are no closer to each other
// than either is to float32.
inline double bf16_nll_bound(const ArchFixture& f, double factor = 2.0) { return factor * max_abs_diff(f.nll_bf16, f.nll_f32); }

// Greedy decoding of `steps` tokens after `prompt` through the KV cache: one prefill, then decode
// steps (Phase::Decode; on CUDA these replay the decode graphs unless `graphs` is false).
// Transformer max_positions: prompt + steps, as transformers' full recompute sees at its last step.
inline std::vector<int32_t> arch_greedy(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& prompt,
                                        int64_t steps, AttentionBackend& attention, bool graphs = true) {
  const int64_t capacity = static_cast<int64_t>(prompt.size()) + steps;
  Transformer transformer(model, capacity);
  transformer.set_decode_graphs(graphs);
  KVCache cache(model->config, model->run, capacity);
  at::Tensor logits = transformer.forward(prompt, cache, attention, LogitsFor::LastToken);
  std::vector<int32_t> out;
  for (int64_t s = 0; s < steps; ++s) {
    const int32_t next = static_cast<int32_t>(logits[0].argmax().item<int64_t>());
    out.push_back(next);
    if (s + 1 < steps) logits = transformer.forward({next}, cache, attention, LogitsFor::LastToken, Phase::Decode);
  }
  return out;
}

// Greedy decoding as transformers' reference did it: every step a full forward of the sequence so
// far, with RoPE tables made for exactly that length (longrope picks its factors by it), or with
// tables for `table_positions` positions at every step when > 0.
inline std::vector<int32_t> arch_greedy_recompute(const std::shared_ptr<const Model>& model,
                                                  const std::vector<int32_t>& prompt, int64_t steps,
                                                  AttentionBackend& attention, int64_t table_positions = 0) {
  std::vector<int32_t> ids = prompt;
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t T = static_cast<int64_t>(ids.size());
    Transformer transformer(model, table_positions > 0 ? table_positions : T);
    KVCache cache(model->config, model->run, T);
    const at::Tensor logits = transformer.forward(ids, cache, attention, LogitsFor::LastToken);
    ids.push_back(static_cast<int32_t>(logits[0].argmax().item<int64_t>()));
  }
  return {ids.begin() + static_cast<std::ptrdiff_t>(prompt.size()), ids.end()};
}

// Two sequences at different lengths (30 and 45 tokens, past the window) decoded 6 steps by
// decode_batch against each alone (batch-1 decode steps, graphs off): the largest logit gap. Each
// layer keeps its own window and RoPE table in the batch, and the final soft-cap applies.
inline double arch_batched_decode_gap(const std::shared_ptr<const Model>& model, const ArchFixture& f) {
  DenseAttention dense;
  const int64_t capacity = 64;
  Transformer transformer(model, capacity);
  transformer.set_decode_graphs(false);
  KVCache a(model->config, model->run, capacity), b(model->config, model->run, capacity);
  KVCache a1(model->config, model->run, capacity), b1(model->config, model->run, capacity);
  const std::vector<int32_t> pa(f.ids.begin(), f.ids.begin() + 30), pb(f.ids.begin() + 10, f.ids.begin() + 55);
  transformer.forward(pa, a, dense), transformer.forward(pb, b, dense);
  transformer.forward(pa, a1, dense), transformer.forward(pb, b1, dense);
  double worst = 0;
  for (size_t s = 0; s < 6; ++s) {
    const std::vector<int32_t> tokens{f.ids[60 + s], f.ids[70 + s]};
    const at::Tensor batched = decode_batch(transformer, tokens, {{&a, &dense}, {&b, &dense}});
    const at::Tensor alone_a = transformer.forward({tokens[0]}, a1, dense, LogitsFor::LastToken, Phase::Decode);
    const at::Tensor alone_b = transformer.forward({tokens[1]}, b1, dense, LogitsFor::LastToken, Phase::Decode);
    worst = std::max(worst, (batched - at::cat({alone_a, alone_b}, 0)).abs().max().item<double>());
  }
  return worst;
}

// Whether transformers' greedy run changed RoPE factors along the way (longrope crossing
// original_max_position_embeddings): then only a full recompute per step reproduces it, and a KV
// cache (whose keys keep the rotation they were written with) is compared with the recompute of
// its own tables instead.
inline bool arch_rope_depends_on_length(const ModelConfig& c, int64_t from, int64_t to) {
  const int64_t o = c.rope.original_max_position_embeddings;
  return c.rope.type == "longrope" && from <= o && to > o;
}

}  // namespace hipstudio::testing
