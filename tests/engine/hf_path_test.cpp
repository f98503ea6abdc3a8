// stories15M through `convert --to hf` and back through the Hugging Face loader.
#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/formats/errors.h"
#include "engine/model/convert_hf.h"
#include "engine/generation/generation.h"
#include "tests/engine/engine_fixture.h"

namespace hipstudio {
namespace {

using testing::default_model;
using testing::TempDir;

const char* kText = "Lily and Ben found a shiny red ball under the big green tree. They laughed and played all day.";

std::shared_ptr<const Model> load_dir(const std::string& dir, const char* dtype = "f32") {
  return load_model(resolve_model_source(dir), parse_run_device("cpu", dtype));
}

TEST(HfPath, ConvertedF32GivesTheSameLogitsAsLlama2c) {
  TempDir tmp;
  const std::string dir = tmp.file("stories15M-hf");
  convert_to_hf(*default_model(), at::kFloat, dir);
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::path(dir) / name)) << name;

  auto hf = load_dir(dir);
  EXPECT_EQ(hf->config.architecture, "LlamaForCausalLM");
  EXPECT_EQ(hf->source.format, ModelFormat::HuggingFace);
  // The HF tokenizer derived from tokenizer.bin must tokenize identically.
  const std::vector<int32_t> ids = default_model()->tokenizer->encode(kText, true);
  EXPECT_EQ(hf->tokenizer->encode(kText, true), ids);

  DenseAttention dense;
  const at::Tensor a = all_logits(default_model(), ids, dense);
  const at::Tensor b = all_logits(hf, ids, dense);
  EXPECT_LE((a - b).abs().max().item<double>(), 1e-4);
}

TEST(HfPath, Bf16ConversionStaysCloseAndHalvesTheFile) {
  TempDir tmp;
  convert_to_hf(*default_model(), at::kFloat, tmp.file("f32"));
  convert_to_hf(*default_model(), at::kBFloat16, tmp.file("bf16"));
  const auto f32_size = std::filesystem::file_size(tmp.path() / "f32" / "model.safetensors");
  const auto bf16_size = std::filesystem::file_size(tmp.path() / "bf16" / "model.safetensors");
  EXPECT_NEAR(static_cast<double>(bf16_size) / static_cast<double>(f32_size), 0.5, 0.01);
  // Loaded back as f32 on the CPU: only the weights were rounded.
  auto hf = load_dir(tmp.file("bf16"));
  DenseAttention dense;
  const std::vector<int32_t> ids = default_model()->tokenizer->encode(kText, true);
  const at::Tensor a = all_logits(default_model(), ids, dense);
  const at::Tensor b = all_logits(hf, ids, dense);
  const double rel = ((a - b).norm() / a.norm()).item<double>();
  EXPECT_LT(rel, 0.05);
  EXPECT_GT(rel, 1e-5);  // really rounded, not silently stored as f32
  EXPECT_EQ(a.argmax(-1).eq(b.argmax(-1)).sum().item<int64_t>() * 10 >= 9 * a.size(0), true);
}

TEST(HfPath, ConvertNeverOverwritesAnExistingDirectory) {
  TempDir tmp;
  const std::string dir = tmp.file("taken");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/precious.txt") << "user data";
  EXPECT_THROW(convert_to_hf(*default_model(), at::kFloat, dir), InputError);
  EXPECT_TRUE(std::filesystem::exists(dir + "/precious.txt"));
  // No temporary directories are left behind.
  int entries = 0;
  for (auto& e : std::filesystem::directory_iterator(tmp.path())) entries += e.path().filename() != "taken";
  EXPECT_EQ(entries, 0);
}

}  // namespace
}  // namespace hipstudio
