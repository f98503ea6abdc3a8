#include "captures/methods_json.h"

#include <stdexcept>

#include "captures/analysis_json_parts.h"
#include "engine/analysis/hip_layer_means.h"

namespace hipstudio::captures {

using nlohmann::json;

json methods_to_json(const std::vector<MethodRun>& runs, const RunInfo& info) {
  if (runs.empty()) throw std::invalid_argument("a method comparison holds at least one method");
  const PairedAnalysis& first = runs.front().analysis;
  // params: the budget every method shares (HiP's fields; the random seed of the views' baseline).
  json j = run_json("hipstudio.methods/1", first, info);
  j["dense"] = side_json(first.dense);
  j["dense"]["latency_ms"] = latency_json(first.dense.latency);
  json order = json::array(), methods = json::object();
  for (const MethodRun& run : runs) {
    const PairedAnalysis& a = run.analysis;
    const hip::methods::SelectionMethod& m = hip::methods::find_selection_method(run.method.name);
    json values = json::object();
    for (const auto& [name, value] : run.method.values) values[name] = value;
    json entry = {{"title", m.title}, {"citation", m.citation}, {"rule", m.rule}, {"values", values}};
    entry["side"] = side_json(a.hip);
    entry["kl"] = number_json(a.kl);
    entry["top1_agreement"] = number_json(a.top1_agreement);
    entry["means"] = {{"recall", number_json(mean_over_hip_layers(a, &HeadQuality::recall))},
                      {"mass", number_json(mean_over_hip_layers(a, &HeadQuality::mass))},
                      {"out_rel_err", number_json(mean_over_hip_layers(a, &HeadQuality::out_rel_err))}};
    entry["layers"] = layers_json(a.layers, /*with_random=*/false);
    entry["decode"] = {{"steps", static_cast<int64_t>(a.decode.size())}, {"mask_refreshes", a.mask_refreshes}};
    entry["latency_ms"] = latency_json(a.hip.latency);
    order.push_back(run.method.name);
    methods[run.method.name] = entry;
  }
  j["order"] = order;
  j["methods"] = methods;
  return j;
}

}  // namespace hipstudio::captures
