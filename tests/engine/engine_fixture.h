#pragma once
// Shared helpers for the engine tests: the default model (loaded once per test binary) and
// temporary directories.
#include <filesystem>
#include <memory>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "engine/formats/model_source.h"
#include "engine/formats/remove_tree.h"
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
    // mkdtemp, not std::random_device: the latter crashes when linked with PyTorch's LibTorch wheels.
    std::string pattern = (std::filesystem::temp_directory_path() / "hipstudio-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed in " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    remove_tree(path_.string());  // not std::filesystem::remove_all: see remove_tree.h
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace hipstudio::testing
