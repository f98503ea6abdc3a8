#pragma once
// Shared helpers for the engine tests: the default model (loaded once per test binary) and
// temporary directories.
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "engine/formats/model_source.h"
#include "engine/model/model.h"

namespace hipstudio::testing {

// stories15M on the CPU in float32. Fails the test (does not skip) when the model is missing:
// scripts/test always fetches it first.
inline std::shared_ptr<const Model> default_model() {
  static std::shared_ptr<const Model> model = [] {
    return load_model(resolve_model_source(""), parse_run_device("cpu", "f32"));
  }();
  return model;
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("hipstudio-test-" + std::to_string(std::random_device{}()) + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace hipstudio::testing
