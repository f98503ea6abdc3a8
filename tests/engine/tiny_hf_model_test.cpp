// A tiny random Qwen2-style checkpoint (grouped-query attention, q/k/v biases, untied classifier,
// rope_theta and llama3 rope scaling, sharded safetensors, bf16 storage) through the engine, checked
// against a plain float64 forward pass written here from the Llama/Qwen2 definitions.
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/formats/safetensors.h"
#include "engine/model/kv_cache.h"
#include "engine/model/transformer.h"
#include "tests/engine/engine_fixture.h"
#include "tests/engine/tiny_hf_checkpoint.h"

namespace hipstudio {
namespace {

using namespace testing::tiny_hf;

// ---- the float64 reference ------------------------------------------------------------------------

std::vector<double> matvec(const TinyWeights& w, const std::string& name, const std::vector<double>& x, int rows, int cols) {
  std::vector<double> y(static_cast<size_t>(rows), 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) y[r] += w.at(name, static_cast<int64_t>(r) * cols + c) * x[c];
  return y;
}

std::vector<double> rms_norm(const TinyWeights& w, const std::string& name, const std::vector<double>& x) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + kEps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w.at(name, static_cast<int64_t>(i));
  return y;
}

// Llama 3.1 scaled inverse frequencies, straight from the published formula.
double inv_freq(int p) {
  const double base = 1.0 / std::pow(kTheta, 2.0 * p / kHeadDim);
  const double wavelen = 2 * M_PI / base, old_len = 16, low = 1, high = 4, factor = 4;
  if (wavelen < old_len / high) return base;
  if (wavelen > old_len / low) return base / factor;
  const double smooth = (old_len / wavelen - low) / (high - low);
  return (1 - smooth) * base / factor + smooth * base;
}

void rope(std::vector<double>& v, int heads, int pos) {
  for (int h = 0; h < heads; ++h)
    for (int p = 0; p < kHeadDim / 2; ++p) {
      double& a = v[h * kHeadDim + p];
      double& b = v[h * kHeadDim + p + kHeadDim / 2];
      const double angle = pos * inv_freq(p), c = std::cos(angle), s = std::sin(angle), a0 = a, b0 = b;
      a = a0 * c - b0 * s;
      b = b0 * c + a0 * s;
    }
}

std::vector<std::vector<double>> reference_logits(const TinyWeights& w, const std::vector<int32_t>& ids) {
  const int T = static_cast<int>(ids.size());
  std::vector<std::vector<double>> x(T, std::vector<double>(kDim));
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < kDim; ++d) x[t][d] = w.at("model.embed_tokens.weight", static_cast<int64_t>(ids[t]) * kDim + d);
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int t = 0; t < T; ++t) {
      const auto h = rms_norm(w, p + "input_layernorm.weight", x[t]);
      q[t] = matvec(w, p + "self_attn.q_proj.weight", h, kHeads * kHeadDim, kDim);
      k[t] = matvec(w, p + "self_attn.k_proj.weight", h, kKvHeads * kHeadDim, kDim);
      v[t] = matvec(w, p + "self_attn.v_proj.weight", h, kKvHeads * kHeadDim, kDim);
      for (int i = 0; i < kHeads * kHeadDim; ++i) q[t][i] += w.at(p + "self_attn.q_proj.bias", i);
      for (int i = 0; i < kKvHeads * kHeadDim; ++i) {
        k[t][i] += w.at(p + "self_attn.k_proj.bias", i);
        v[t][i] += w.at(p + "self_attn.v_proj.bias", i);
      }
      rope(q[t], kHeads, t);
      rope(k[t], kKvHeads, t);
    }
    for (int t = 0; t < T; ++t) {
      std::vector<double> attended(kHeads * kHeadDim, 0.0);
      for (int h = 0; h < kHeads; ++h) {
        const int g = h / (kHeads / kKvHeads);
        std::vector<double> s(t + 1);
        double m = -1e300, z = 0;
        for (int j = 0; j <= t; ++j) {
          double dot = 0;
          for (int d = 0; d < kHeadDim; ++d) dot += q[t][h * kHeadDim + d] * k[j][g * kHeadDim + d];
          s[j] = dot / std::sqrt(static_cast<double>(kHeadDim));
          m = std::max(m, s[j]);
        }
        for (int j = 0; j <= t; ++j) z += s[j] = std::exp(s[j] - m);
        for (int j = 0; j <= t; ++j)
          for (int d = 0; d < kHeadDim; ++d) attended[h * kHeadDim + d] += s[j] / z * v[j][g * kHeadDim + d];
      }
      const auto o = matvec(w, p + "self_attn.o_proj.weight", attended, kDim, kHeads * kHeadDim);
      for (int d = 0; d < kDim; ++d) x[t][d] += o[d];
      const auto h = rms_norm(w, p + "post_attention_layernorm.weight", x[t]);
      const auto gate = matvec(w, p + "mlp.gate_proj.weight", h, kHidden, kDim);
      const auto up = matvec(w, p + "mlp.up_proj.weight", h, kHidden, kDim);
      std::vector<double> act(kHidden);
      for (int i = 0; i < kHidden; ++i) act[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
      const auto down = matvec(w, p + "mlp.down_proj.weight", act, kDim, kHidden);
      for (int d = 0; d < kDim; ++d) x[t][d] += down[d];
    }
  }
  std::vector<std::vector<double>> logits;
  for (int t = 0; t < T; ++t) logits.push_back(matvec(w, "lm_head.weight", rms_norm(w, "model.norm.weight", x[t]), kVocab, kDim));
  return logits;
}

TEST(TinyHfModel, ShardedBf16Qwen2WithGqaBiasAndLlama3RopeMatchesFloat64Reference) {
  testing::TempDir tmp;
  const TinyWeights w = make_weights();
  write_checkpoint(w, tmp.path().string());

  auto model = std::make_shared<Model>();
  model->run = parse_run_device("cpu", "f32");
  model->weights = load_hf_weights(tmp.path().string(), at::kFloat, &model->config);
  EXPECT_TRUE(model->config.attention_bias);
  EXPECT_EQ(model->config.n_kv_heads, kKvHeads);
  EXPECT_EQ(model->config.rope.type, "llama3");
  EXPECT_FALSE(model->weights.classifier.is_same(model->weights.embedding));

  const std::vector<int32_t> ids = {1, 7, 42, 3, 19, 19, 0, 25, 48, 11, 30, 5, 2, 17, 33, 9, 21, 40, 6, 13};
  Transformer transformer(model, static_cast<int64_t>(ids.size()));
  KVCache cache(model->config, model->run, static_cast<int64_t>(ids.size()));
  DenseAttention dense;
  // Prefill half, then decode the rest through the cache: both paths are covered.
  at::Tensor first = transformer.forward({ids.begin(), ids.begin() + 10}, cache, dense, LogitsFor::AllTokens);
  std::vector<at::Tensor> rows{first};
  for (size_t i = 10; i < ids.size(); ++i) rows.push_back(transformer.forward({ids[i]}, cache, dense, LogitsFor::LastToken, Phase::Decode));
  const at::Tensor engine = at::cat(rows, 0).to(at::kDouble);

  const auto reference = reference_logits(w, ids);
  double max_diff = 0;
  for (size_t t = 0; t < ids.size(); ++t)
    for (int v = 0; v < kVocab; ++v)
      max_diff = std::max(max_diff, std::abs(engine[static_cast<int64_t>(t)][v].item<double>() - reference[t][v]));
  EXPECT_LT(max_diff, 1e-4) << "positions beyond original_max_position_embeddings exercise the llama3 scaling";
}

}  // namespace
}  // namespace hipstudio
