// libFuzzer target: the HiP parameters on the command line, i.e. the real CLI11 option
// registration of app/hip_options.cpp (--topk --bq --bk --bsq --bsk --sink --window --repr --ld --rm
// --cache-factor, as `mask`, `analyze`, `capture` and `bench model` register them) followed by
// HipOptions::model_params(), which runs kernels/hip_params.cpp's parse_repr and
// validate_hip_params, then the offloading config check (engine/offload) that sizes banks from
// them. Input: argv, one argument per line.
// Expected outcomes: CLI::ParseError (what CLI11 prints as usage) or InputError; parameters that
// are accepted must satisfy every rule the kernels index with.
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/hip_options.h"
#include "engine/offload/offload_simulator.h"
#include "tests/fuzz/fuzz_common.h"

using namespace hipstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (!current.empty()) args.push_back(current);
  if (args.size() > 64) return 0;

  CLI::App command("fuzzed HiP options");
  app::HipOptions options;
  options.add_model_options(command);
  std::reverse(args.begin(), args.end());  // CLI11 consumes a vector from its back
  try {
    command.parse(args);
  } catch (const CLI::ParseError&) {
    return 0;
  }
  HIPSTUDIO_FUZZ_EXPECT_INPUT_ERRORS({
    const HipModelParams m = options.model_params();
    const hip::HipParams& p = m.hip;
    fuzz::require(p.k >= p.b_k && p.b_k >= 1 && p.k % p.b_k == 0 && p.b_k % p.b_sk == 0 && p.b_q % p.b_sq == 0 &&
                      p.b_sq >= 1 && p.b_sk >= 1 && p.sink >= 0 && p.window >= 0 && p.sink % p.b_k == 0 &&
                      p.window % p.b_k == 0 && p.rho >= 0.0 && p.rho <= 1.0 && hip::hip_kb(p) <= INT32_MAX,
                  "accepted HiP parameters that break a kernel rule");
    fuzz::require(m.dense_layers >= 0 && m.refresh_every >= 1 && options.cache_factor > 0,
                  "accepted model-level parameters out of range");
    // What the kernels and the capture reader derive from them for the longest context they take
    // (positions are int32): block counts and one query block's budget must not overflow.
    const int64_t longest = INT32_MAX;
    const int64_t query_blocks = (longest + p.b_q - 1) / p.b_q;
    const int64_t key_blocks = (longest + p.b_k - 1) / p.b_k;
    const int64_t budget = p.sink + p.window + p.k + p.b_q;
    fuzz::require(query_blocks >= 1 && key_blocks >= 1 && budget >= p.k, "block counts or budget overflowed");
    // The offloading replay sizes its mask bank from these flags (what analyze / capture do next).
    for (const int64_t context : {int64_t{1}, int64_t{256}, int64_t{INT32_MAX}}) {
      offload::OffloadConfig config;
      config.cache_factor = options.cache_factor;
      config.k = p.k;
      config.b_sk = p.b_sk;
      config.context_tokens = context;
      offload::validate_config(config);
      fuzz::require(offload::mask_bank_tokens(config) >= 0, "negative mask bank size");
    }
  });
  return 0;
}
