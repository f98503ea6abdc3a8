#include "engine/analysis/sweep.h"

#include <cmath>
#include <stdexcept>

#include "engine/analysis/hip_layer_means.h"
#include "engine/formats/errors.h"
#include "engine/runtime/run_cancelled.h"

namespace hipstudio {

namespace {
using hip::HipField;

std::string point_name(HipField field, int64_t value) {
  return std::string(hip::hip_field_name(field)) + " = " + std::to_string(value);
}
}  // namespace

AnalysisOptions sweep_point_options(const AnalysisOptions& base, HipField field, int64_t value) {
  if (!sweep_field_allowed(field))
    throw InputError(std::string("a sweep varies k, b_k, b_q, l_d or r_m, not '") + hip::hip_field_name(field) + "'");
  AnalysisOptions options = base;
  options.keep_all_layers = false;
  options.keep_layers.clear();
  options.views_only_layer = -1;
  options.keep_viewed_if_short = false;
  options.viewed_layer_first = false;
  options.random_scores = false;  // a sweep row reports none of the random baseline's numbers
  if (field == HipField::kDenseLayers) {
    if (value < 0) throw InputError(point_name(field, value) + ": l_d must be >= 0");
    options.hip.dense_layers = value;
  } else if (field == HipField::kRefreshEvery) {
    if (value < 1) throw InputError(point_name(field, value) + ": r_m must be >= 1");
    options.hip.refresh_every = value;
  } else {
    *hip::hip_size_field(options.hip.hip, field) = value;
  }
  try {
    hip::validate_hip_params(options.hip.hip);
  } catch (const std::invalid_argument& e) {
    throw InputError(point_name(field, value) + ": " + e.what());
  }
  return options;
}

SweepRow sweep_row(const PairedAnalysis& a, int64_t value, bool timed) {
  SweepRow row;
  row.value = value;
  row.recall = mean_over_hip_layers(a, &HeadQuality::recall);
  row.mass = mean_over_hip_layers(a, &HeadQuality::mass);
  row.out_rel_err = mean_over_hip_layers(a, &HeadQuality::out_rel_err);
  row.kl = a.kl;
  row.latency_ms = timed ? a.hip.latency.prefill.total() : NAN;
  row.mask_refreshes = a.mask_refreshes;
  return row;
}

SweepResult run_sweep(std::shared_ptr<const Model> model, const std::string& prompt, const AnalysisOptions& base,
                      const SweepSpec& spec, const AnalysisProgress& progress) {
  if (spec.values.empty()) throw InputError("a sweep needs at least one value");
  std::vector<AnalysisOptions> points;
  for (int64_t v : spec.values) {
    points.push_back(sweep_point_options(base, spec.field, v));
    const int64_t full = model->config.full_attention_layers();  // what l_d counts
    if (spec.field == HipField::kDenseLayers && v >= full)
      throw InputError(point_name(spec.field, v) + ": give a value from 0 to " + std::to_string(full - 1) +
                       " (the first l_d full-attention layers run dense; this model has " + std::to_string(full) +
                       " of them)");
  }
  if (spec.views_layer < -1 || spec.views_layer >= model->config.n_layers)
    throw InputError("the sweep's views layer " + std::to_string(spec.views_layer) + " is outside the model's " +
                     std::to_string(model->config.n_layers) + " layers: give 0 to " +
                     std::to_string(model->config.n_layers - 1) + ", or -1 for every layer");
  for (AnalysisOptions& o : points) o.views_only_layer = spec.views_layer;  // the other layers' views stay pending
  SweepResult result;
  result.field = spec.field;
  result.views_layer = spec.views_layer;
  result.timed = model->run.device.is_cuda();
  const double n = static_cast<double>(points.size());
  // Point i owns the fraction [i / n, (i + 1) / n) of the progress; the first also holds the dense prefill.
  const auto part = [&](size_t i) {
    return [&progress, i, n, &spec](double f, const std::string& what) {
      if (!progress) return true;
      const std::string at = point_name(spec.field, spec.values[i]) + " (" + std::to_string(i + 1) + " of " +
                             std::to_string(static_cast<int64_t>(n)) + "): " + what;
      if (!progress((static_cast<double>(i) + f) / n, at)) throw RunCancelled();
      return true;
    };
  };
  const int64_t steps = base.decode_steps;
  std::unique_ptr<PairedPrefill> prefill;
  for (size_t i = 0; i < points.size(); ++i) {
    const AnalysisOptions& o = points[i];
    const auto report = part(i);
    if (!prefill)
      prefill = PairedPrefill::run(model, prompt, o, steps, [&](double f, const std::string& w) { return report(0.8 * f, w); });
    else if (spec.field != HipField::kRefreshEvery)
      prefill->rerun_hip(o, [&](double f, const std::string& w) { return report(0.8 * f, w); });
    // A row reads the decode steps only for their mask refreshes, which follow r_m's cadence alone
    // (the dense side's steps are replayed, not re-run): a sweep of another field decodes its first
    // value, and its later values carry that count over with their prompt-only numbers.
    const bool decode_this = i == 0 || spec.field == HipField::kRefreshEvery;
    const PairedAnalysis a = prefill->decode(decode_this ? steps : 0, o.hip.refresh_every,
                                             [&](double f, const std::string& w) { return report(0.8 + 0.2 * f, w); });
    result.prompt_tokens = static_cast<int64_t>(a.prompt_ids.size());
    result.rows.push_back(sweep_row(a, spec.values[i], result.timed));
    if (!decode_this) result.rows.back().mask_refreshes = result.rows.front().mask_refreshes;
  }
  if (progress && !progress(1.0, "sweep done")) throw RunCancelled();
  return result;
}

}  // namespace hipstudio
