#include "app/hip_options.h"

#include "app/cli_options.h"
#include "engine/formats/errors.h"
#include "kernels/hip_param_fields.h"

namespace hipstudio::app {

namespace {
using hip::HipField;
const hip::HipParamField& field(HipField f) { return hip::hip_param_field(f); }

// An integer option of the field table: its flag, help and range.
void add_field(CLI::App& cmd, HipField f, int64_t& value) {
  const hip::HipParamField& d = field(f);
  add_number(cmd, d.cli_flag, value, d.cli_help, static_cast<int64_t>(d.cli_lo), static_cast<int64_t>(d.cli_hi));
}
}  // namespace

void HipOptions::add_kernel_options(CLI::App& cmd) {
  for (HipField f : hip::kHipSizeFields) add_field(cmd, f, *hip::hip_size_field(params, f));
  cmd.add_option(field(HipField::kRho).cli_flag, repr, field(HipField::kRho).cli_help)
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            try {
              hip::parse_repr(s);
              return "";
            } catch (const std::invalid_argument& e) {
              return e.what();
            }
          },
          "", "repr"));
}

void HipOptions::add_model_options(CLI::App& cmd) {
  add_kernel_options(cmd);
  add_field(cmd, HipField::kDenseLayers, dense_layers);
  add_field(cmd, HipField::kRefreshEvery, refresh_every);
  const hip::HipParamField& c = field(HipField::kCacheFactor);
  add_number(cmd, c.cli_flag, cache_factor, c.cli_help, c.cli_lo, c.cli_hi);
}

hip::HipParams HipOptions::kernel_params() const {
  try {
    hip::HipParams p = params;
    p.rho = hip::parse_repr(repr);
    hip::validate_hip_params(p);
    return p;
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("invalid HiP parameters: ") + e.what());
  }
}

HipModelParams HipOptions::model_params() const {
  HipModelParams m;
  m.hip = kernel_params();
  m.dense_layers = dense_layers;
  m.refresh_every = refresh_every;
  const auto flag = [](HipField f) { return std::string(field(f).cli_flag); };
  if (dense_layers < 0) throw InputError("invalid HiP parameters: " + flag(HipField::kDenseLayers) + " must be >= 0");
  if (refresh_every < 1) throw InputError("invalid HiP parameters: " + flag(HipField::kRefreshEvery) + " must be >= 1");
  if (!(cache_factor > 0)) throw InputError("invalid HiP parameters: " + flag(HipField::kCacheFactor) + " must be > 0");
  return m;
}

void HipOptions::check_dense_layers(const ModelConfig& config) const {
  // l_d counts the layers HiP can replace (the full-attention ones; windowed layers keep their
  // window on both sides), so its bound is their number, not the model's layer count.
  const int64_t full = config.full_attention_layers();
  if (dense_layers >= 0 && dense_layers < full) return;
  const std::string windowed = full < config.n_layers ? " of its " + std::to_string(config.n_layers) + " (the others are sliding-window layers, which HiP does not replace)" : "";
  throw InputError("--ld " + std::to_string(dense_layers) + " is out of range: give a value from 0 to " +
                   std::to_string(full - 1) + " (this model has " + std::to_string(full) + " full-attention layers" + windowed +
                   "; the first l_d of them run dense, so l_d = " + std::to_string(full) +
                   " or more would leave no layer to HiP)");
}

}  // namespace hipstudio::app
