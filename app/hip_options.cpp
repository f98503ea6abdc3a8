#include "app/hip_options.h"

#include "engine/formats/errors.h"

namespace hipstudio::app {

void HipOptions::add_kernel_options(CLI::App& cmd) {
  cmd.add_option("--topk", params.k, "top-k budget in tokens (k)")->capture_default_str();
  cmd.add_option("--bq", params.b_q, "query block size (b_q)")->capture_default_str();
  cmd.add_option("--bk", params.b_k, "key block size (b_k)")->capture_default_str();
  cmd.add_option("--bsq", params.b_sq, "query stride when scoring a branch (b_sq)")->capture_default_str();
  cmd.add_option("--bsk", params.b_sk, "key stride when scoring a branch (b_sk)")->capture_default_str();
  cmd.add_option("--sink", params.sink, "sink tokens S always attended")->capture_default_str();
  cmd.add_option("--window", params.window, "sliding-window tokens W attended densely")->capture_default_str();
  cmd.add_option("--repr", repr, "representative of a branch: center, first, last or a FRACTION in [0, 1]")
      ->capture_default_str();
}

void HipOptions::add_model_options(CLI::App& cmd) {
  add_kernel_options(cmd);
  cmd.add_option("--ld", dense_layers, "dense layers l_d (the first l_d layers skip HiP)")->capture_default_str();
  cmd.add_option("--rm", refresh_every, "mask refresh interval r_m in decode steps")->capture_default_str();
  cmd.add_option("--cache-factor", cache_factor, "offloading: mask-estimation bank of c * (k / b_sk) * log2 T tokens")
      ->capture_default_str();
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
  if (dense_layers < 0) throw InputError("invalid HiP parameters: --ld must be >= 0");
  if (refresh_every < 1) throw InputError("invalid HiP parameters: --rm must be >= 1");
  if (!(cache_factor > 0)) throw InputError("invalid HiP parameters: --cache-factor must be > 0");
  return m;
}

}  // namespace hipstudio::app
