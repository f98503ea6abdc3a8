#pragma once
// A parameter sweep of the paired run: one HiP parameter (k, b_k, b_q, l_d or r_m) over a list of
// values, each value's quality (recall, attention mass, output error, mean over the HiP layers' heads),
// KL(dense || HiP) and, on a CUDA device, HiP's prefill latency. The one place that computes a sweep:
// `hipstudio analyze --sweep` and the GUI's sweep panel both call run_sweep.
//
// Reuse: the dense prefill runs once for the whole sweep (PairedPrefill::rerun_hip against it for
// each value; only the layers from the lower l_d on run again), and an r_m sweep runs no prefill
// again at all, only the decode steps (r_m only changes decoding). The decode steps feed a row only
// its mask refreshes, which follow r_m's cadence alone: a sweep of any other field decodes its first
// value only, and the later rows carry that count.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/analysis/paired_analysis.h"
#include "engine/analysis/sweep_result.h"

namespace hipstudio {

// `base` with `field` set to `value`, the HiP parameters checked (InputError naming the field, the
// value and the broken rule: "k = 15: k (15) must be a multiple of b_k (2)"). The options also keep
// no layer's inputs or views: a sweep needs the per-head numbers only.
AnalysisOptions sweep_point_options(const AnalysisOptions& base, hip::HipField field, int64_t value);

// The sweep row of one finished paired run at `value` (timed: read the HiP prefill's latency).
SweepRow sweep_row(const PairedAnalysis& analysis, int64_t value, bool timed);

// The sweep: spec.values in order against one dense prefill of `prompt` under `base` (whose
// decode_steps and every other setting hold for each value). progress reports the fraction of the
// whole sweep; returning false throws RunCancelled. Every value is checked (sweep_point_options)
// before any work starts.
SweepResult run_sweep(std::shared_ptr<const Model> model, const std::string& prompt, const AnalysisOptions& base,
                      const SweepSpec& spec, const AnalysisProgress& progress = {});

}  // namespace hipstudio
