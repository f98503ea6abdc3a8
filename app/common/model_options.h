#pragma once
// Which model to load and how, shared by the command line and the GUI (the layer both link, so the
// GUI never includes the CLI's files): the same path resolution and thread policy everywhere.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/model/model.h"

namespace hipstudio::app {

struct ModelOptions {
  std::string model;       // empty = default model
  std::string tokenizer;   // empty = beside the model
  std::string device = "cpu";
  std::string dtype = "f32";
  int threads = 1;         // LibTorch intra-op threads; 0 = all cores (see load())
  int64_t context = 0;     // 0 = the model's max_seq_len

  // Resolves, loads and reports (on stderr) the model; throws InputError with a fix. Benchmarks that
  // feed token ids pass require_tokenizer = false (a random-weight checkpoint has no tokenizer).
  std::shared_ptr<const Model> load(bool require_tokenizer = true) const;
};

// Thread counts as every command spells them: 0 means every hardware thread.
int resolve_threads(int threads);

}  // namespace hipstudio::app
