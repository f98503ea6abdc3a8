#pragma once
// The options of a paired dense-vs-HiP run as the command line spells them, shared by `analyze` and
// `capture` (which must produce the same run for the same flags): HiP parameters, decoding, the
// random baseline's seed and the offloading simulation.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "app/hip_options.h"
#include "engine/analysis/paired_result.h"
#include "engine/model/model.h"
#include "engine/offload/offload_simulator.h"

namespace hipstudio::app {

struct AnalysisCliOptions {
  HipOptions hip;
  int64_t decode = 0;
  bool free_running = false;
  uint64_t seed = 1;
  std::string page_table = "vector";
  std::string policy = "lru";
  int64_t mask_bank = 0, sparse_bank = 0;

  void add_to(CLI::App& command);
  // Validates the HiP parameters (InputError naming the rule).
  AnalysisOptions analysis(int64_t context_limit) const;
  // The offloading replay of `analysis`' access streams: bank sizes from the flags, bytes per token
  // from the model's head size and dtype (keys for mask estimation, keys + values for attention).
  offload::OffloadConfig offload(const PairedAnalysis& analysis, const Model& model) const;
};

}  // namespace hipstudio::app
