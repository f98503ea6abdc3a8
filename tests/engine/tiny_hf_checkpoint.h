#pragma once
// A tiny random Qwen2-style checkpoint for tests: grouped-query attention (4 query heads over 2 KV
// heads), q/k/v biases, untied classifier, rope_theta and llama3 rope scaling, sharded safetensors
// in bf16. Written by tests that need a Hugging Face folder with GQA (the float64 forward-pass test,
// the views' CUDA-vs-reference test), plus a byte tokenizer that fits its 50-token vocabulary.
#include <cstdint>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "engine/formats/dtype.h"
#include "engine/formats/safetensors.h"
#include "engine/tokenizer/tokenizer.h"

namespace hipstudio::testing::tiny_hf {

constexpr int kDim = 32, kHidden = 48, kLayers = 2, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kVocab = 50;
constexpr double kTheta = 5000.0, kEps = 1e-6;

using Matrix = std::vector<double>;  // row-major

struct TinyWeights {
  std::map<std::string, std::vector<float>> tensors;
  std::map<std::string, std::vector<int64_t>> shapes;
  void add(const std::string& name, std::vector<int64_t> shape, std::mt19937& rng, double scale, double offset = 0) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::normal_distribution<double> normal(0.0, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = static_cast<float>(offset + normal(rng));
    tensors[name] = v;
    shapes[name] = shape;
  }
  // The value the engine sees after bf16 storage (round to nearest even).
  double at(const std::string& name, int64_t i) const {
    return at::tensor(tensors.at(name)[static_cast<size_t>(i)]).to(at::kBFloat16).to(at::kDouble).item<double>();
  }
};

inline TinyWeights make_weights() {
  std::mt19937 rng(1234);
  TinyWeights w;
  w.add("model.embed_tokens.weight", {kVocab, kDim}, rng, 1.0);
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    w.add(p + "input_layernorm.weight", {kDim}, rng, 0.1, 1.0);
    w.add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kDim}, rng, 0.3);
    w.add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kDim}, rng, 0.3);
    w.add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kDim}, rng, 0.3);
    w.add(p + "self_attn.q_proj.bias", {kHeads * kHeadDim}, rng, 0.2);
    w.add(p + "self_attn.k_proj.bias", {kKvHeads * kHeadDim}, rng, 0.2);
    w.add(p + "self_attn.v_proj.bias", {kKvHeads * kHeadDim}, rng, 0.2);
    w.add(p + "self_attn.o_proj.weight", {kDim, kHeads * kHeadDim}, rng, 0.2);
    w.add(p + "post_attention_layernorm.weight", {kDim}, rng, 0.1, 1.0);
    w.add(p + "mlp.gate_proj.weight", {kHidden, kDim}, rng, 0.2);
    w.add(p + "mlp.up_proj.weight", {kHidden, kDim}, rng, 0.2);
    w.add(p + "mlp.down_proj.weight", {kDim, kHidden}, rng, 0.2);
  }
  w.add("model.norm.weight", {kDim}, rng, 0.1, 1.0);
  w.add("lm_head.weight", {kVocab, kDim}, rng, 0.3);
  return w;
}

// Writes config.json and the weights as bf16 in two shards with an index.
inline void write_checkpoint(const TinyWeights& w, const std::string& dir, int max_positions = 64) {
  nlohmann::json config = {{"architectures", {"Qwen2ForCausalLM"}}, {"hidden_size", kDim}, {"intermediate_size", kHidden},
                           {"num_hidden_layers", kLayers}, {"num_attention_heads", kHeads}, {"num_key_value_heads", kKvHeads},
                           {"vocab_size", kVocab}, {"max_position_embeddings", max_positions}, {"rms_norm_eps", kEps},
                           {"rope_theta", kTheta}, {"tie_word_embeddings", false}, {"bos_token_id", 1}, {"eos_token_id", 2},
                           {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 4.0}, {"low_freq_factor", 1.0},
                                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 16}}}};
  std::ofstream(dir + "/config.json") << config.dump(2);
  std::vector<std::vector<uint16_t>> bf16;
  std::vector<TensorToWrite> shard[2];
  nlohmann::json weight_map;
  int i = 0;
  for (const auto& [name, values] : w.tensors) {
    std::vector<uint16_t> bits;
    for (float v : values) bits.push_back(float_to_bf16(v));
    bf16.push_back(std::move(bits));
    const int s = (i++) % 2;
    shard[s].push_back({name, StoredDType::BF16, w.shapes.at(name), nullptr});
    weight_map[name] = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
  }
  // Pointers are set after all vectors exist (bf16 no longer reallocates).
  int j = 0;
  for (const auto& entry : w.tensors) {
    const int s = j % 2;
    for (TensorToWrite& t : shard[s])
      if (t.name == entry.first) t.data = bf16[static_cast<size_t>(j)].data();
    ++j;
  }
  write_safetensors(dir + "/model-00001-of-00002.safetensors", shard[0]);
  write_safetensors(dir + "/model-00002-of-00002.safetensors", shard[1]);
  std::ofstream(dir + "/model.safetensors.index.json") << nlohmann::json({{"weight_map", weight_map}}).dump();
}

// Maps each byte to one of ids 3..49 (0-2 stay special: BOS 1, EOS 2), so any text encodes into the
// tiny model's vocabulary. Decoding is lossy; the tests that use it only need ids.
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool add_bos) const override {
    std::vector<int32_t> ids;
    if (add_bos) ids.push_back(1);
    for (unsigned char c : text) ids.push_back(3 + static_cast<int32_t>(c % (kVocab - 3)));
    return ids;
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (int32_t id : ids)
      if (id >= 3 && id < kVocab) s += static_cast<char>('0' + (id - 3) % 75);
    return s;
  }
  std::string token_text(int32_t id) const override { return decode({id}); }
  int32_t bos_id() const override { return 1; }
  int32_t eos_id() const override { return 2; }
  int32_t vocab_size() const override { return kVocab; }
};

}  // namespace hipstudio::testing::tiny_hf
