#pragma once
// What a sweep (engine/analysis/sweep.h) gives the user, written one way for the command line and the
// GUI (no LibTorch here: the GUI's panels include it): the stdout table, the CSV, one SVG figure per
// metric (metric against the swept value, a line per selection method) and the JSON. `analyze --sweep` and the GUI's sweep panel both write these files.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/analysis/paired_result.h"
#include "engine/analysis/sweep_result.h"
#include "viz/figure.h"

namespace hipstudio::app {

enum class SweepMetric { kRecall, kMass, kOutRelErr, kKl, kLatency };

struct SweepMetricInfo {
  SweepMetric metric;
  const char* key;    // the CSV column and the SVG file's suffix: "recall"
  const char* label;  // axis label and the GUI's picker: "recall (vs oracle)"
};
// Every metric, in column order.
const std::array<SweepMetricInfo, 5>& sweep_metrics();
double sweep_metric_value(const SweepRow& row, SweepMetric metric);

// The colour of the i-th method's line (Okabe and Ito's colour-blind-safe set) as 0xRRGGBB: the
// SVG's and the GUI panel's.
uint32_t sweep_method_color(size_t i);
// The methods of `result`'s rows in the order they first appear (each figure's lines, in order).
std::vector<std::string> sweep_methods(const SweepResult& result);

// Who/what/where the figures name under their titles: model, device, T, the parameters not swept.
std::string sweep_context(const std::string& model, const std::string& device, const AnalysisOptions& base,
                          const SweepResult& result);

// What the quality columns average: "recall, mass and error: mean over the HiP layers" or "... layer L alone".
std::string sweep_views_scope(const SweepResult& result);

// A fixed-width table after a "# " line of sweep_views_scope, one line per row: method, value and every metric ("n/a" for an untimed latency).
std::string sweep_table(const SweepResult& result);
// Header `method,<field>,recall,mass,out_rel_err,kl,latency_ms,mask_refreshes`; an untimed latency
// is an empty cell.
std::string sweep_csv(const SweepResult& result);
// The figure of one metric: x the swept value (linear), a line per method.
std::string sweep_svg(const SweepResult& result, SweepMetric metric, const std::string& context,
                      const viz::FigureStyle& style = viz::paper_style());
// schema hipstudio.sweep/1: field, timed, prompt_tokens, views_layer (null: every HiP layer), context, rows.
std::string sweep_json(const SweepResult& result, const std::string& context);

// The files of a sweep, named after the field: sweep_<field>.csv and sweep_<field>_<metric>.svg for
// each metric (latency only when timed). (file name, contents), in that order.
std::vector<std::pair<std::string, std::string>> sweep_files(const SweepResult& result, const std::string& context);
// The file names sweep_files gives for `field` (timed: with the latency figure), for checking the
// outputs before the work.
std::vector<std::string> sweep_file_names(hip::HipField field, bool timed);

}  // namespace hipstudio::app
