#pragma once
// The architecture fixtures (tests/fixtures/archs/<variant>, saved by transformers 5.17 with
// scripts/dev/arch_fixtures.py) and edited copies of them for the loader's refusal tests.
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/formats/safetensors.h"

namespace hipstudio::testing {

inline const std::vector<std::string> kArchVariants = {
    "llama_tied", "llama2", "llama3", "llama32_tied", "llama_bias", "mistral", "mistral_window", "qwen2",
    "qwen2_tied", "qwen2_window", "qwen3", "qwen3_tied", "gemma2", "gemma3", "gemma3_linear", "phi3",
    "phi3_window", "phi3_longrope"};

inline std::string arch_fixture(const std::string& variant) {
  return std::string(HIPSTUDIO_SOURCE_DIR) + "/tests/fixtures/archs/" + variant;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

inline void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(2); }

// Copies a fixture's config.json and tokenizer.json into `dir`, and its weights after `edit` has
// changed the list of tensors (add, drop, rename, or point data elsewhere; it may keep buffers alive
// in `keep`).
inline void copy_fixture(const std::string& variant, const std::string& dir,
                         const std::function<void(std::vector<TensorToWrite>&, std::vector<std::vector<float>>& keep)>& edit = {}) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  fs::copy_file(arch_fixture(variant) + "/config.json", dir + "/config.json");
  fs::copy_file(arch_fixture(variant) + "/tokenizer.json", dir + "/tokenizer.json");
  const SafetensorsFile file(arch_fixture(variant) + "/model.safetensors");
  std::vector<TensorToWrite> tensors;
  for (const TensorInfo& t : file.tensors()) tensors.push_back({t.name, t.dtype, t.shape, t.data});
  std::vector<std::vector<float>> keep;
  keep.reserve(64);
  if (edit) edit(tensors, keep);
  write_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
}

}  // namespace hipstudio::testing
