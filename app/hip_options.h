#pragma once
// The HiP parameters as command-line options, shared by `mask`, `analyze` and later `capture`.
#include <string>

#include <CLI/CLI.hpp>

#include "engine/analysis/hip_model_params.h"

namespace hipstudio::app {

struct HipOptions {
  hip::HipParams params;
  std::string repr = "center";
  int64_t dense_layers = 3;    // --ld
  int64_t refresh_every = 8;   // --rm
  double cache_factor = 2.0;   // --cache-factor

  // Kernel parameters (--topk --bq --bk --bsq --bsk --sink --window --repr).
  void add_kernel_options(CLI::App& command);
  // Model-level ones too (--ld --rm --cache-factor).
  void add_model_options(CLI::App& command);
  // Parses --repr and validates every rule; throws InputError naming the broken rule.
  hip::HipParams kernel_params() const;
  HipModelParams model_params() const;
};

}  // namespace hipstudio::app
