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
  // Refuses --ld outside 0..n_layers-1 for a model of n_layers layers (InputError with that range): the
  // first l_d layers run dense, and with l_d >= n_layers HiP would never run at all.
  void check_dense_layers(int64_t n_layers) const;
};

}  // namespace hipstudio::app
