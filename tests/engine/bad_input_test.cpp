// Every kind of bad input the engine can meet gives an InputError whose message names the problem.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/formats/errors.h"
#include "engine/formats/safetensors.h"
#include "engine/analysis/context_plan.h"
#include "engine/model/convert_hf.h"
#include "engine/generation/generation.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

namespace fs = std::filesystem;
using testing::default_model;
using testing::TempDir;

// Runs `f`, expecting an InputError whose message contains every one of `needles`.
template <class F>
void expect_input_error(F&& f, std::initializer_list<const char*> needles) {
  try {
    f();
    ADD_FAILURE() << "no error was thrown";
  } catch (const InputError& e) {
    const std::string message = e.what();
    for (const char* n : needles) EXPECT_NE(message.find(n), std::string::npos) << "'" << n << "' not in: " << message;
  }
}

std::shared_ptr<const Model> load_path(const std::string& path) {
  return load_model(resolve_model_source(path), parse_run_device("cpu", "f32"));
}

void copy_prefix(const std::string& from, const std::string& to, std::streamsize bytes) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  std::vector<char> buffer(static_cast<size_t>(bytes));
  in.read(buffer.data(), bytes);
  out.write(buffer.data(), in.gcount());
}

// A small valid Hugging Face directory (stories15M converted) that tests then damage.
class HfDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.file("model");
    convert_to_hf(*default_model(), at::kFloat, dir_);
  }
  nlohmann::json config() {
    std::ifstream in(dir_ + "/config.json");
    return nlohmann::json::parse(in);
  }
  void write_config(const nlohmann::json& j) { std::ofstream(dir_ + "/config.json") << j.dump(); }
  // Rewrites model.safetensors with `edit` applied to the tensor list (data copied).
  template <class Edit>
  void rewrite_weights(Edit&& edit) {
    std::vector<TensorToWrite> tensors;
    std::vector<std::vector<char>> keep;
    {
      SafetensorsFile file(dir_ + "/model.safetensors");
      for (const TensorInfo& t : file.tensors()) {
        keep.emplace_back(static_cast<const char*>(t.data), static_cast<const char*>(t.data) + t.nbytes);
        tensors.push_back({t.name, t.dtype, t.shape, nullptr});
      }
      for (size_t i = 0; i < tensors.size(); ++i) tensors[i].data = keep[i].data();
    }
    edit(tensors);
    fs::remove(dir_ + "/model.safetensors");
    write_safetensors(dir_ + "/model.safetensors", tensors);
  }
  void write_raw_safetensors(const std::string& header, size_t data_bytes) {
    std::ofstream out(dir_ + "/model.safetensors", std::ios::binary | std::ios::trunc);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(data_bytes, '\0');
  }

  TempDir tmp_;
  std::string dir_;
};

TEST(BadInput, TruncatedCheckpoint) {
  TempDir tmp;
  copy_prefix(default_model()->source.checkpoint, tmp.file("model.bin"), 1000000);
  fs::copy_file(default_model()->source.tokenizer, tmp.file("tokenizer.bin"));
  expect_input_error([&] { load_path(tmp.file("model.bin")); }, {"truncated", "model.bin"});
}

TEST(BadInput, CheckpointWithTrailingBytes) {
  TempDir tmp;
  fs::copy_file(default_model()->source.checkpoint, tmp.file("model.bin"));
  std::ofstream(tmp.file("model.bin"), std::ios::app | std::ios::binary) << "junk";
  fs::copy_file(default_model()->source.tokenizer, tmp.file("tokenizer.bin"));
  expect_input_error([&] { load_path(tmp.file("model.bin")); }, {"4 bytes more"});
}

TEST(BadInput, WrongCheckpointHeader) {
  TempDir tmp;
  std::ofstream out(tmp.file("model.bin"), std::ios::binary);
  const int32_t header[7] = {288, 768, 6, 7, 6, 32000, 256};  // dim not a multiple of heads
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out << std::string(4096, 'x');
  out.close();
  fs::copy_file(default_model()->source.tokenizer, tmp.file("tokenizer.bin"));
  expect_input_error([&] { load_path(tmp.file("model.bin")); }, {"multiple of the number of heads"});
  std::ofstream(tmp.file("tiny.bin"), std::ios::binary) << "abc";
  expect_input_error([&] { load_path(tmp.file("tiny.bin")); }, {"too short"});
}

TEST(BadInput, MissingModelAndTokenizerFiles) {
  TempDir tmp;
  expect_input_error([&] { load_path(tmp.file("nope.bin")); }, {"does not exist"});
  fs::copy_file(default_model()->source.checkpoint, tmp.file("model.bin"));
  expect_input_error([&] { load_path(tmp.file("model.bin")); }, {"tokenizer.bin", "--tokenizer"});
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", tmp.path().c_str(), 1);
  expect_input_error([&] { resolve_model_source(""); }, {"scripts/fetch-model", "--model"});
  if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else unsetenv("XDG_CACHE_HOME");
}

TEST_F(HfDirTest, MissingConfigKey) {
  auto j = config();
  j.erase("hidden_size");
  write_config(j);
  expect_input_error([&] { load_path(dir_); }, {"hidden_size", "config.json"});
}

TEST_F(HfDirTest, UnsupportedArchitecture) {
  auto j = config();
  j["architectures"] = {"GPT2LMHeadModel"};
  write_config(j);
  expect_input_error([&] { load_path(dir_); }, {"GPT2LMHeadModel", "not supported", "LlamaForCausalLM"});
}

TEST_F(HfDirTest, ConfigThatDoesNotMatchTheWeights) {
  auto j = config();
  j["intermediate_size"] = 512;
  write_config(j);
  expect_input_error([&] { load_path(dir_); }, {"shape", "config.json implies"});
}

TEST_F(HfDirTest, MissingTensor) {
  rewrite_weights([](std::vector<TensorToWrite>& t) {
    t.erase(std::remove_if(t.begin(), t.end(), [](auto& x) { return x.name == "model.layers.3.mlp.up_proj.weight"; }), t.end());
  });
  expect_input_error([&] { load_path(dir_); }, {"model.layers.3.mlp.up_proj.weight"});
}

TEST_F(HfDirTest, UnsupportedDtype) {
  rewrite_weights([](std::vector<TensorToWrite>& t) {
    for (auto& x : t)
      if (x.name == "model.norm.weight") x.dtype = StoredDType::I32;  // same byte size as F32
  });
  expect_input_error([&] { load_path(dir_); }, {"model.norm.weight", "I32", "not supported"});
}

TEST_F(HfDirTest, SafetensorsOffsetsOutOfRange) {
  write_raw_safetensors(R"({"model.norm.weight":{"dtype":"F32","shape":[288],"data_offsets":[0,1152]}})", 100);
  expect_input_error([&] { load_path(dir_); }, {"model.safetensors", "model.norm.weight", "outside the data section"});
}

TEST_F(HfDirTest, SafetensorsSizeThatDoesNotMatchTheShape) {
  write_raw_safetensors(R"({"model.norm.weight":{"dtype":"F32","shape":[288],"data_offsets":[0,1000]}})", 1000);
  expect_input_error([&] { load_path(dir_); }, {"model.safetensors", "1000 bytes of data but shape [288]", "needs 1152"});
}

TEST(BadInput, EmptyPromptAndEmptyText) {
  DenseAttention dense;
  expect_input_error([&] { generate(default_model(), "", GenerationOptions{}, dense); }, {"prompt is empty"});
  expect_input_error([&] { score_text(default_model(), "", dense); }, {"empty"});
}

TEST(BadInput, PromptLongerThanTheContext) {
  DenseAttention dense;
  std::string prompt;
  for (int i = 0; i < 300; ++i) prompt += "dog ";
  expect_input_error([&] { generate(default_model(), prompt, GenerationOptions{}, dense); },
                     {"context is 256 tokens", "--context"});
}

TEST(BadInput, PromptLongerThanMemoryCanHold) {
  // 2M tokens of a 32-layer 8B-like model need far more than 1 GiB: refused with the numbers.
  ModelConfig big = default_model()->config;
  big.n_layers = 32;
  big.n_heads = 32;
  big.n_kv_heads = 8;
  big.head_dim = 128;
  expect_input_error(
      [&] { plan_context(big, parse_run_device("cpu", "f32"), 2'000'000, 16, 4'000'000, uint64_t{1} << 30); },
      {"needs about", "MiB", "KV cache", "shorter prompt"});
  // And a real run whose prompt cannot fit in what the machine has free.
  EXPECT_NO_THROW(plan_context(big, parse_run_device("cpu", "f32"), 1000, 16, 4096, uint64_t{64} << 30));
}

TEST(BadInput, ImpossibleDeviceAndDtype) {
  expect_input_error([] { parse_run_device("cpu", "f16"); }, {"f16", "CPU"});
  expect_input_error([] { parse_run_device("tpu", "f32"); }, {"unknown device"});
  expect_input_error([] { parse_run_device("cpu", "int4"); }, {"unknown dtype"});
  if (!cuda_available()) expect_input_error([] { parse_run_device("cuda", "f32"); }, {"--device cpu"});
}

}  // namespace
}  // namespace hipstudio
