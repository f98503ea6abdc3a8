// The Hugging Face loader over every architecture fixture: the tensors the table names land in the
// right LayerWeights fields (fused, biased, Gemma's 1 + w folded), and what the table does not
// expect is refused by name: an extra tensor, a missing one, a layer count that disagrees with the
// weights, a NaN weight, a shard outside the model folder. Then `convert --to hf` and back.
#include <filesystem>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/architectures.h"
#include "engine/formats/errors.h"
#include "engine/model/convert_hf.h"
#include "engine/model/model.h"
#include "tests/engine/arch_fixture.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

using testing::arch_fixture;
using testing::copy_fixture;
using testing::kArchVariants;
using testing::TempDir;

// The file's tensor as float32 (a copy).
at::Tensor file_tensor(const std::string& variant, const std::string& name) {
  const SafetensorsFile f(arch_fixture(variant) + "/model.safetensors");
  const TensorInfo& t = f.get(name);
  return at::from_blob(const_cast<void*>(t.data), t.shape, at::kFloat).clone();
}

std::string load_error(const std::string& dir) {
  try {
    ModelConfig c;
    load_hf_weights(dir, at::kFloat, &c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ArchLoader, EveryFixtureLoadsIntoTheTablesFields) {
  for (const std::string& v : kArchVariants) {
    SCOPED_TRACE(v);
    ModelConfig c;
    const ModelWeights w = load_hf_weights(arch_fixture(v), at::kFloat, &c);
    const Architecture& a = *find_architecture(c.architecture);
    ASSERT_EQ(static_cast<int64_t>(w.layers.size()), c.n_layers);
    EXPECT_EQ(w.classifier.is_same(w.embedding), c.tie_word_embeddings);
    for (const LayerWeights& l : w.layers) {
      EXPECT_EQ(l.wqkv.sizes(), at::IntArrayRef({c.q_dim() + 2 * c.kv_dim(), c.dim}));
      EXPECT_EQ(l.w13.sizes(), at::IntArrayRef({2 * c.hidden_dim, c.dim}));
      EXPECT_EQ(l.bqkv.defined(), c.attention_bias);
      EXPECT_EQ(l.bo.defined(), c.attention_out_bias);
      EXPECT_EQ(l.b13.defined() && l.b2.defined(), c.mlp_bias);
      EXPECT_EQ(l.q_norm.defined() && l.k_norm.defined(), c.qk_norm);
      EXPECT_EQ(l.post_attn_norm.defined() && l.post_mlp_norm.defined(), c.sandwich_norms);
      if (c.qk_norm) {
        EXPECT_EQ(l.q_norm.sizes(), at::IntArrayRef({c.head_dim}));
      }
    }
    // Gemma's (1 + w) is folded at load, in float32; the others keep w.
    const at::Tensor stored = file_tensor(v, "model.layers.0.input_layernorm.weight");
    EXPECT_TRUE(at::equal(w.layers[0].attn_norm.to(at::kFloat), a.norm_plus_one ? stored + 1.0f : stored));
    EXPECT_TRUE(at::equal(w.final_norm.to(at::kFloat),
                          a.norm_plus_one ? file_tensor(v, kFinalNormTensor) + 1.0f : file_tensor(v, kFinalNormTensor)));
  }
}

// The parameter count (and so the memory estimate's weight bytes) comes from the table's switches:
// it must equal what the files hold, biases, q/k norms and sandwich norms included.
TEST(ArchLoader, ParameterCountMatchesTheFiles) {
  for (const std::string& v : kArchVariants) {
    SCOPED_TRACE(v);
    ModelConfig c;
    load_hf_weights(arch_fixture(v), at::kFloat, &c);
    const SafetensorsModel files(arch_fixture(v));
    int64_t stored = 0, norms = 0;
    for (const std::string& name : files.names()) {
      stored += files.get(name).numel();
      if (name.find("norm") != std::string::npos) norms += files.get(name).numel();
    }
    EXPECT_EQ(model_parameter_count(c), stored);
    EXPECT_EQ(model_norm_parameter_count(c), norms);
  }
}

TEST(ArchLoader, NamesMapByTheTable) {
  ModelConfig c;
  // Gemma: post_attention_layernorm is the norm on the attention output, pre_feedforward the MLP's.
  const ModelWeights g = load_hf_weights(arch_fixture("gemma2"), at::kFloat, &c);
  EXPECT_TRUE(at::equal(g.layers[1].post_attn_norm, file_tensor("gemma2", "model.layers.1.post_attention_layernorm.weight") + 1.0f));
  EXPECT_TRUE(at::equal(g.layers[1].mlp_norm, file_tensor("gemma2", "model.layers.1.pre_feedforward_layernorm.weight") + 1.0f));
  EXPECT_TRUE(at::equal(g.layers[1].post_mlp_norm, file_tensor("gemma2", "model.layers.1.post_feedforward_layernorm.weight") + 1.0f));
  const ModelWeights g3 = load_hf_weights(arch_fixture("gemma3"), at::kFloat, &c);
  EXPECT_TRUE(at::equal(g3.layers[2].k_norm, file_tensor("gemma3", "model.layers.2.self_attn.k_norm.weight") + 1.0f));
  // Qwen3's q/k norms are plain RMSNorm weights.
  const ModelWeights q3 = load_hf_weights(arch_fixture("qwen3"), at::kFloat, &c);
  EXPECT_TRUE(at::equal(q3.layers[0].q_norm, file_tensor("qwen3", "model.layers.0.self_attn.q_norm.weight")));
  // Phi-3's fused projections are already in wqkv / w13 order.
  const ModelWeights p = load_hf_weights(arch_fixture("phi3"), at::kFloat, &c);
  EXPECT_TRUE(at::equal(p.layers[2].wqkv, file_tensor("phi3", "model.layers.2.self_attn.qkv_proj.weight")));
  EXPECT_TRUE(at::equal(p.layers[2].w13, file_tensor("phi3", "model.layers.2.mlp.gate_up_proj.weight")));
  // Llama's biases: q/k/v, o_proj, and gate/up/down.
  const ModelWeights b = load_hf_weights(arch_fixture("llama_bias"), at::kFloat, &c);
  EXPECT_TRUE(at::equal(b.layers[1].bo, file_tensor("llama_bias", "model.layers.1.self_attn.o_proj.bias")));
  EXPECT_TRUE(at::equal(b.layers[1].b13.narrow(0, c.hidden_dim, c.hidden_dim),
                        file_tensor("llama_bias", "model.layers.1.mlp.up_proj.bias")));
  EXPECT_TRUE(at::equal(b.layers[1].b2, file_tensor("llama_bias", "model.layers.1.mlp.down_proj.bias")));
}

TEST(ArchLoader, AnExtraTensorIsRefusedByName) {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  copy_fixture("llama2", dir, [](std::vector<TensorToWrite>& t, std::vector<std::vector<float>>& keep) {
    keep.emplace_back(16, 1.0f);
    t.push_back({"model.layers.0.self_attn.q_norm.weight", StoredDType::F32, {16}, keep.back().data()});
  });
  const std::string message = load_error(dir);
  EXPECT_NE(message.find("model.layers.0.self_attn.q_norm.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("not used by LlamaForCausalLM"), std::string::npos) << message;
  // An o_proj bias without attention_bias in config.json is the same.
  const std::string dir2 = tmp.file("m2");
  copy_fixture("llama2", dir2, [](std::vector<TensorToWrite>& t, std::vector<std::vector<float>>& keep) {
    keep.emplace_back(64, 0.5f);
    t.push_back({"model.layers.1.self_attn.o_proj.bias", StoredDType::F32, {64}, keep.back().data()});
  });
  EXPECT_NE(load_error(dir2).find("model.layers.1.self_attn.o_proj.bias"), std::string::npos);
}

TEST(ArchLoader, AMissingTensorIsRefusedByName) {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  copy_fixture("qwen3", dir, [](std::vector<TensorToWrite>& t, std::vector<std::vector<float>>&) {
    t.erase(std::remove_if(t.begin(), t.end(), [](const TensorToWrite& x) { return x.name == "model.layers.1.self_attn.k_norm.weight"; }),
            t.end());
  });
  EXPECT_NE(load_error(dir).find("missing tensor 'model.layers.1.self_attn.k_norm.weight'"), std::string::npos) << load_error(dir);
}

TEST(ArchLoader, ALayerCountThatDisagreesWithTheWeightsIsRefused) {
  TempDir tmp;
  for (int layers : {2, 4}) {
    const std::string dir = tmp.file("m" + std::to_string(layers));
    copy_fixture("llama2", dir);  // 3 layers
    nlohmann::json config = testing::read_json(dir + "/config.json");
    config["num_hidden_layers"] = layers;
    testing::write_json(dir + "/config.json", config);
    const std::string message = load_error(dir);
    EXPECT_NE(message.find("num_hidden_layers " + std::to_string(layers)), std::string::npos) << message;
  }
}

TEST(ArchLoader, ANonFiniteWeightIsRefusedWithFileTensorAndIndex) {
  TempDir tmp;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const std::string dir = tmp.file(std::isnan(bad) ? "nan" : "inf");
    copy_fixture("gemma2", dir, [&](std::vector<TensorToWrite>& t, std::vector<std::vector<float>>& keep) {
      for (TensorToWrite& x : t)
        if (x.name == "model.layers.2.mlp.up_proj.weight") {
          const float* src = static_cast<const float*>(x.data);
          keep.emplace_back(src, src + 112 * 64);
          keep.back()[77] = bad;
          x.data = keep.back().data();
        }
    });
    const std::string message = load_error(dir);
    EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
    EXPECT_NE(message.find("'model.layers.2.mlp.up_proj.weight'"), std::string::npos) << message;
    EXPECT_NE(message.find("flat index 77"), std::string::npos) << message;
  }
}

TEST(ArchLoader, ATiedCheckpointsClassifierCopyMustBeTheEmbedding) {
  TempDir tmp;
  const std::string same = tmp.file("same"), other = tmp.file("other");
  auto add_head = [](bool equal) {
    return [equal](std::vector<TensorToWrite>& t, std::vector<std::vector<float>>& keep) {
      for (const TensorToWrite& x : std::vector<TensorToWrite>(t))
        if (x.name == kEmbeddingTensor) {
          const float* src = static_cast<const float*>(x.data);
          keep.emplace_back(src, src + 320 * 64);
          if (!equal) keep.back()[3] += 1.0f;
          t.push_back({kClassifierTensor, StoredDType::F32, x.shape, keep.back().data()});
        }
    };
  };
  copy_fixture("llama_tied", same, add_head(true));
  copy_fixture("llama_tied", other, add_head(false));
  EXPECT_EQ(load_error(same), "");
  EXPECT_NE(load_error(other).find("lm_head.weight"), std::string::npos);
}

TEST(ArchLoader, AShardOutsideTheModelFolderIsRefused) {
  namespace fs = std::filesystem;
  TempDir tmp;
  copy_fixture("llama2", tmp.file("outside"));
  for (const std::string& shard : {std::string("../outside/model.safetensors"), tmp.file("outside/model.safetensors"),
                                   std::string("link.safetensors")}) {
    const std::string dir = tmp.file("m" + std::to_string(shard.size()));
    fs::create_directories(dir);
    fs::copy_file(tmp.file("outside/config.json"), dir + "/config.json");
    if (shard == "link.safetensors") fs::create_symlink(tmp.file("outside/model.safetensors"), dir + "/link.safetensors");
    nlohmann::json map;
    for (const std::string& name : SafetensorsModel(tmp.file("outside")).names()) map[name] = shard;
    testing::write_json(dir + "/model.safetensors.index.json", {{"weight_map", map}});
    const std::string message = load_error(dir);
    EXPECT_NE(message.find("'" + shard + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("outside the model folder"), std::string::npos) << message;
  }
}

TEST(ArchLoader, ConvertToHfAndBackKeepsConfigAndWeights) {
  TempDir tmp;
  for (const std::string& v : kArchVariants) {
    SCOPED_TRACE(v);
    const RunDevice cpu{c10::Device(c10::kCPU), at::kFloat};
    auto model = load_model(resolve_model_source(arch_fixture(v)), cpu);
    const std::string out = tmp.file(v);
    convert_to_hf(*model, at::kFloat, out);
    auto back = load_model(resolve_model_source(out), cpu);
    const ModelConfig &a = model->config, &b = back->config;
    EXPECT_EQ(a.architecture, b.architecture);
    EXPECT_EQ(a.rope, b.rope);
    EXPECT_EQ(a.rope_local, b.rope_local);
    EXPECT_EQ(a.layer_window, b.layer_window);
    EXPECT_EQ(a.attention_scale, b.attention_scale);
    EXPECT_EQ(a.attn_softcap, b.attn_softcap);
    EXPECT_EQ(a.final_softcap, b.final_softcap);
    const ModelWeights &x = model->weights, &y = back->weights;
    EXPECT_TRUE(at::equal(x.embedding, y.embedding));
    EXPECT_TRUE(at::equal(x.classifier, y.classifier));
    EXPECT_TRUE(at::equal(x.final_norm, y.final_norm));
    for (size_t l = 0; l < x.layers.size(); ++l) {
      const LayerWeights &p = x.layers[l], &q = y.layers[l];
      for (auto [s, t] : {std::pair{p.attn_norm, q.attn_norm}, {p.wqkv, q.wqkv}, {p.bqkv, q.bqkv}, {p.q_norm, q.q_norm},
                          {p.k_norm, q.k_norm}, {p.wo, q.wo}, {p.bo, q.bo}, {p.post_attn_norm, q.post_attn_norm},
                          {p.mlp_norm, q.mlp_norm}, {p.w13, q.w13}, {p.b13, q.b13}, {p.w2, q.w2}, {p.b2, q.b2},
                          {p.post_mlp_norm, q.post_mlp_norm}}) {
        ASSERT_EQ(s.defined(), t.defined()) << "layer " << l;
        if (s.defined()) {
          EXPECT_TRUE(at::equal(s, t)) << "layer " << l;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hipstudio
