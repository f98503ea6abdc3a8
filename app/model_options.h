#pragma once
// Options shared by every command that loads a model, and the @FILE convention for text arguments.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/model/model.h"

namespace hipstudio::app {

struct ModelOptions {
  std::string model;       // empty = default model
  std::string tokenizer;   // empty = beside the model
  std::string device = "cpu";
  std::string dtype = "f32";
  int threads = 0;         // CPU threads; 0 = LibTorch's default (all cores)
  int64_t context = 0;     // 0 = the model's max_seq_len

  void add_to(CLI::App& command);
  // Resolves, loads and reports (on stderr) the model; throws InputError with a fix. Benchmarks that
  // feed token ids pass require_tokenizer = false (a random-weight checkpoint has no tokenizer).
  std::shared_ptr<const Model> load(bool require_tokenizer = true) const;
};

// "TEXT" -> TEXT; "@FILE" -> the file's contents (InputError if unreadable); "@@x" -> "@x".
std::string read_text_argument(const std::string& value, const std::string& option_name);

}  // namespace hipstudio::app
