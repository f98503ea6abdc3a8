#include "app/common/sweep_outputs.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "captures/svg_plots.h"
#include "viz/number_text.h"

namespace hipstudio::app {

namespace {
using hip::HipField;

// Okabe and Ito's colour-blind-safe set, one colour per method in the order the rows name them.
constexpr std::array<uint32_t, 6> kMethodColors = {0x0072b2, 0xd55e00, 0x009e73, 0xcc79a7, 0xe69f00, 0x56b4e9};

std::string number(double v, const char* format) { return viz::number_text(v, format, ""); }

}  // namespace

uint32_t sweep_method_color(size_t i) { return kMethodColors[i % kMethodColors.size()]; }

std::vector<std::string> sweep_methods(const SweepResult& r) {
  std::vector<std::string> names;
  for (const SweepRow& row : r.rows) {
    bool seen = false;
    for (const std::string& n : names) seen |= n == row.method;
    if (!seen) names.push_back(row.method);
  }
  return names;
}

const std::array<SweepMetricInfo, 5>& sweep_metrics() {
  static const std::array<SweepMetricInfo, 5> metrics = {{
      {SweepMetric::kRecall, "recall", "recall (vs oracle)"},
      {SweepMetric::kMass, "mass", "attention mass on the picked keys"},
      {SweepMetric::kOutRelErr, "out_rel_err", "output relative error"},
      {SweepMetric::kKl, "kl", "KL(dense || HiP)"},
      {SweepMetric::kLatency, "latency_ms", "HiP prefill latency (ms)"},
  }};
  return metrics;
}

double sweep_metric_value(const SweepRow& row, SweepMetric metric) {
  switch (metric) {
    case SweepMetric::kRecall: return row.recall;
    case SweepMetric::kMass: return row.mass;
    case SweepMetric::kOutRelErr: return row.out_rel_err;
    case SweepMetric::kKl: return row.kl;
    case SweepMetric::kLatency: return row.latency_ms;
  }
  return NAN;
}

std::string sweep_context(const std::string& model, const std::string& device, const AnalysisOptions& base,
                          const SweepResult& result) {
  std::string held;
  const auto add = [&](HipField f, int64_t v) {
    if (f == result.field) return;
    held += (held.empty() ? "" : ", ") + std::string(hip::hip_field_name(f)) + " " + std::to_string(v);
  };
  const hip::HipParams& p = base.hip.hip;
  add(HipField::kK, p.k);
  add(HipField::kBq, p.b_q);
  add(HipField::kBk, p.b_k);
  add(HipField::kBsq, p.b_sq);
  add(HipField::kBsk, p.b_sk);
  add(HipField::kSink, p.sink);
  add(HipField::kWindow, p.window);
  add(HipField::kDenseLayers, base.hip.dense_layers);
  add(HipField::kRefreshEvery, base.hip.refresh_every);
  add(HipField::kDecodeSteps, base.decode_steps);
  std::string c = model + " on " + device + ", T = " + std::to_string(result.prompt_tokens) + "; " + held;
  c += "; " + sweep_views_scope(result);
  if (!result.timed) c += "; no latency: the CPU runs HiP's float64 correctness reference";
  return c;
}

std::string sweep_views_scope(const SweepResult& r) {
  return r.views_layer < 0 ? "recall, mass and error: mean over the HiP layers"
                           : "recall, mass and error: layer " + std::to_string(r.views_layer) + " alone";
}

std::string sweep_table(const SweepResult& r) {
  const std::string field = hip::hip_field_name(r.field);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %8s %10s %10s %12s %12s %12s %10s\n", "method", field.c_str(), "recall", "mass",
                "out_rel_err", "kl", "latency_ms", "refreshes");
  out = "# " + sweep_views_scope(r) + "\n" + line;
  for (const SweepRow& row : r.rows) {
    const std::string latency = std::isfinite(row.latency_ms) ? number(row.latency_ms, "%.3f") : "n/a";
    std::snprintf(line, sizeof line, "%-8s %8lld %10.4f %10.4f %12.5f %12.6f %12s %10lld\n", row.method.c_str(),
                  static_cast<long long>(row.value), row.recall, row.mass, row.out_rel_err, row.kl, latency.c_str(),
                  static_cast<long long>(row.mask_refreshes));
    out += line;
  }
  return out;
}

std::string sweep_csv(const SweepResult& r) {
  std::string out = std::string("method,") + hip::hip_field_name(r.field);
  for (const SweepMetricInfo& m : sweep_metrics()) out += std::string(",") + m.key;
  out += ",mask_refreshes\n";
  for (const SweepRow& row : r.rows) {
    out += row.method + "," + std::to_string(row.value);
    for (const SweepMetricInfo& m : sweep_metrics()) out += "," + number(sweep_metric_value(row, m.metric), "%.17g");
    out += "," + std::to_string(row.mask_refreshes) + "\n";
  }
  return out;
}

std::string sweep_svg(const SweepResult& r, SweepMetric metric, const std::string& context, const viz::FigureStyle& style) {
  const SweepMetricInfo* info = nullptr;
  for (const SweepMetricInfo& m : sweep_metrics())
    if (m.metric == metric) info = &m;
  const std::string field = hip::hip_field_name(r.field);
  std::vector<captures::PlotSeries> series;
  const std::vector<std::string> methods = sweep_methods(r);
  for (size_t i = 0; i < methods.size(); ++i) {
    captures::PlotSeries s;
    s.name = methods[i];
    char css[8];
    std::snprintf(css, sizeof css, "#%06x", static_cast<unsigned>(sweep_method_color(i)));
    s.color = css;
    for (const SweepRow& row : r.rows)
      if (row.method == methods[i]) {
        s.x.push_back(static_cast<double>(row.value));
        s.y.push_back(sweep_metric_value(row, metric));
      }
    series.push_back(std::move(s));
  }
  // A linear value axis: its ticks fall on round values (a log axis ticks only at powers of ten,
  // which a sweep of 128 .. 1024 never crosses).
  const bool unit = metric == SweepMetric::kRecall || metric == SweepMetric::kMass;
  return captures::svg_line_chart(std::string(info->label) + " against " + field, field, info->label, series, false,
                                  unit ? 0.0 : NAN, unit ? 1.0 : NAN, style, context);
}

std::string sweep_json(const SweepResult& r, const std::string& context) {
  nlohmann::json j;
  j["schema"] = "hipstudio.sweep/1";
  j["field"] = hip::hip_field_name(r.field);
  j["timed"] = r.timed;
  j["prompt_tokens"] = r.prompt_tokens;
  j["views_layer"] = r.views_layer < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.views_layer);
  j["context"] = context;
  nlohmann::json rows = nlohmann::json::array();
  for (const SweepRow& row : r.rows) {
    nlohmann::json o = {{"method", row.method}, {"value", row.value}, {"mask_refreshes", row.mask_refreshes}};
    for (const SweepMetricInfo& m : sweep_metrics()) {
      const double v = sweep_metric_value(row, m.metric);
      o[m.key] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
    }
    rows.push_back(o);
  }
  j["rows"] = rows;
  return j.dump(1) + "\n";
}

std::vector<std::string> sweep_file_names(HipField field, bool timed) {
  const std::string stem = std::string("sweep_") + hip::hip_field_name(field);
  std::vector<std::string> names = {stem + ".csv"};
  for (const SweepMetricInfo& m : sweep_metrics())
    if (m.metric != SweepMetric::kLatency || timed) names.push_back(stem + "_" + m.key + ".svg");
  return names;
}

std::vector<std::pair<std::string, std::string>> sweep_files(const SweepResult& r, const std::string& context) {
  std::vector<std::pair<std::string, std::string>> files;
  const std::vector<std::string> names = sweep_file_names(r.field, r.timed);
  files.emplace_back(names[0], sweep_csv(r));
  size_t i = 1;
  for (const SweepMetricInfo& m : sweep_metrics())
    if (m.metric != SweepMetric::kLatency || r.timed) files.emplace_back(names[i++], sweep_svg(r, m.metric, context));
  return files;
}

}  // namespace hipstudio::app
