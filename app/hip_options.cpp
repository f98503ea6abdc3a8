#include "app/hip_options.h"

#include "app/cli_options.h"
#include "engine/formats/errors.h"

namespace hipstudio::app {

// Ranges: sizes are token counts that must fit the kernels' int32 positions with room for the
// products they form (k / b_k blocks per query block, log2 T levels); 2^20 tokens of budget, sink
// or window is beyond every context this tool runs, 4096 beyond any useful block or stride.
constexpr int64_t kMaxTokens = int64_t{1} << 20;
constexpr int64_t kMaxBlock = 4096;

void HipOptions::add_kernel_options(CLI::App& cmd) {
  add_number(cmd, "--topk", params.k, "top-k budget in tokens (k)", int64_t{1}, kMaxTokens);
  add_number(cmd, "--bq", params.b_q, "query block size (b_q)", int64_t{1}, kMaxBlock);
  add_number(cmd, "--bk", params.b_k, "key block size (b_k)", int64_t{1}, kMaxBlock);
  add_number(cmd, "--bsq", params.b_sq, "query stride when scoring a branch (b_sq)", int64_t{1}, kMaxBlock);
  add_number(cmd, "--bsk", params.b_sk, "key stride when scoring a branch (b_sk)", int64_t{1}, kMaxBlock);
  add_number(cmd, "--sink", params.sink, "sink tokens S always attended", int64_t{0}, kMaxTokens);
  add_number(cmd, "--window", params.window, "sliding-window tokens W attended densely", int64_t{0}, kMaxTokens);
  cmd.add_option("--repr", repr, "representative of a branch: center, first, last or a FRACTION in [0, 1]")
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
  add_number(cmd, "--ld", dense_layers, "dense layers l_d (the first l_d layers skip HiP)", int64_t{0}, int64_t{4096});
  add_number(cmd, "--rm", refresh_every, "mask refresh interval r_m in decode steps", int64_t{1}, kMaxTokens);
  add_number(cmd, "--cache-factor", cache_factor, "offloading: mask-estimation bank of c * (k / b_sk) * log2 T tokens",
             1e-3, 1e3);
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

void HipOptions::check_dense_layers(int64_t n_layers) const {
  if (dense_layers >= 0 && dense_layers < n_layers) return;
  throw InputError("--ld " + std::to_string(dense_layers) + " is out of range: give a value from 0 to " +
                   std::to_string(n_layers - 1) + " (this model has " + std::to_string(n_layers) +
                   " layers; the first l_d run dense, so l_d = " + std::to_string(n_layers) +
                   " or more would leave no layer to HiP)");
}

}  // namespace hipstudio::app
