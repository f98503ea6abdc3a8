#include "captures/capture_compare.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "captures/params_fields.h"

namespace hipstudio::captures {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The mean of one field over a layer's heads, skipping NaN (a windowed layer's heads); NaN when none.
double head_mean(const LayerQuality& q, double HeadQuality::*field) {
  double sum = 0;
  int64_t n = 0;
  for (const HeadQuality& h : q.heads)
    if (std::isfinite(h.*field)) sum += h.*field, ++n;
  return n ? sum / static_cast<double>(n) : kNaN;
}

double prefill_ms(const PairedAnalysis& p, size_t index) {
  const auto& rows = p.hip.latency.prefill_layers;
  return index < rows.size() ? rows[index].total() : kNaN;
}

}  // namespace

CaptureComparison compare_captures(const PairedAnalysis& a, const PairedAnalysis& b) {
  CaptureComparison c;
  c.model = {{"KL(dense || HiP)", {a.kl, b.kl}},
             {"dense perplexity", {a.dense.ppl, b.dense.ppl}},
             {"HiP perplexity", {a.hip.ppl, b.hip.ppl}},
             {"top-1 agreement", {a.top1_agreement, b.top1_agreement}},
             {"HiP prefill ms", {a.hip.latency.prefill.total(), b.hip.latency.prefill.total()}},
             {"dense prefill ms", {a.dense.latency.prefill.total(), b.dense.latency.prefill.total()}}};
  std::map<int64_t, ComparedLayer> rows;
  auto add = [&rows](const PairedAnalysis& p, bool side_b) {
    for (size_t i = 0; i < p.layers.size(); ++i) {
      const LayerQuality& q = p.layers[i];
      ComparedLayer& r = rows[q.layer];
      r.layer = q.layer;
      if (!r.in_a && !r.in_b) r.recall = r.mass = r.out_rel_err = r.hip_prefill_ms = {kNaN, kNaN};
      (side_b ? r.in_b : r.in_a) = true;
      auto set = [side_b](ComparedValue& v, double x) { (side_b ? v.b : v.a) = x; };
      set(r.recall, head_mean(q, &HeadQuality::recall));
      set(r.mass, head_mean(q, &HeadQuality::mass));
      set(r.out_rel_err, head_mean(q, &HeadQuality::out_rel_err));
      set(r.hip_prefill_ms, prefill_ms(p, i));
    }
  };
  add(a, false);
  add(b, true);
  for (auto& [layer, r] : rows) c.layers.push_back(r);

  if (a.prompt_ids != b.prompt_ids)
    c.differences.push_back("prompts differ (" + std::to_string(a.prompt_ids.size()) + " vs " + std::to_string(b.prompt_ids.size()) +
                            " tokens)");
  for (const hip::HipParamField& f : hip::hip_param_fields()) {
    if (!f.manifest_key) continue;
    const nlohmann::json va = params_value(a.options, f.field), vb = params_value(b.options, f.field);
    if (va != vb) c.differences.push_back(std::string(f.manifest_key) + " " + va.dump() + " vs " + vb.dump());
  }
  if (a.layers.size() != b.layers.size())
    c.differences.push_back("layers " + std::to_string(a.layers.size()) + " vs " + std::to_string(b.layers.size()));
  return c;
}

std::string comparison_text(const CaptureComparison& c, const std::string& name_a, const std::string& name_b) {
  std::ostringstream s;
  auto num = [](double v, const char* f) {
    if (std::isnan(v)) return std::string("-");
    char b[40];
    std::snprintf(b, sizeof b, f, v);
    return std::string(b);
  };
  auto cells = [&](const ComparedValue& v, const char* f, const char* df) {
    char b[160];
    std::snprintf(b, sizeof b, " %12s %12s %12s", num(v.a, f).c_str(), num(v.b, f).c_str(), num(v.diff(), df).c_str());
    return std::string(b);
  };
  s << "A: " << name_a << "\nB: " << name_b << "\n";
  if (c.differences.empty()) s << "runs: same prompt and parameters\n";
  for (const std::string& d : c.differences) s << "differs: " << d << "\n";
  char head[200];
  std::snprintf(head, sizeof head, "\n%-20s %12s %12s %12s\n", "model", "A", "B", "B-A");
  s << head;
  for (const auto& [name, v] : c.model) {
    char b[40];
    std::snprintf(b, sizeof b, "%-20s", name.c_str());
    s << b << cells(v, "%.6g", "%+.4g") << "\n";
  }
  std::snprintf(head, sizeof head, "\n%-6s%39s%39s%39s%39s\n", "layer", "recall: A B B-A", "mass: A B B-A", "output error: A B B-A",
                "HiP prefill ms: A B B-A");
  s << head;
  for (const ComparedLayer& l : c.layers) {
    char b[16];
    std::snprintf(b, sizeof b, "%-6lld", static_cast<long long>(l.layer));
    s << b << cells(l.recall, "%.4f", "%+.4f") << cells(l.mass, "%.4f", "%+.4f") << cells(l.out_rel_err, "%.4g", "%+.3g")
      << cells(l.hip_prefill_ms, "%.3f", "%+.3f") << "\n";
  }
  return s.str();
}

}  // namespace hipstudio::captures
