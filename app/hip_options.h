#pragma once
// The HiP parameters as command-line options, shared by `mask`, `analyze`, `capture` and the benches:
// flags, help and ranges from the field table (kernels/hip_param_fields.h).
#include <string>

#include <CLI/CLI.hpp>

#include "engine/analysis/hip_model_params.h"
#include "engine/formats/model_config.h"
#include "kernels/hip_param_fields.h"

namespace hipstudio::app {

struct HipOptions {
  hip::HipParams params;
  std::string repr = "center";
  // Defaults from the field table (kernels/hip_param_fields.cpp).
  int64_t dense_layers = static_cast<int64_t>(hip::hip_param_field(hip::HipField::kDenseLayers).default_value);  // --ld
  int64_t refresh_every = static_cast<int64_t>(hip::hip_param_field(hip::HipField::kRefreshEvery).default_value);  // --rm
  double cache_factor = hip::hip_param_field(hip::HipField::kCacheFactor).default_value;  // --cache-factor

  // Kernel parameters (--topk --bq --bk --bsq --bsk --sink --window --repr).
  void add_kernel_options(CLI::App& command);
  // Model-level ones too (--ld --rm --cache-factor).
  void add_model_options(CLI::App& command);
  // Parses --repr and validates every rule; throws InputError naming the broken rule.
  hip::HipParams kernel_params() const;
  HipModelParams model_params() const;
  // Refuses --ld outside 0..n_layers-1 for a model of n_layers layers (InputError with that range): the
  // first l_d layers run dense, and with l_d >= n_layers HiP would never run at all.
  void check_dense_layers(const ModelConfig& config) const;
};

}  // namespace hipstudio::app
