// The methods a capture holds: each one's side taken from its run, looked up by name, and swapped
// in as the side a capture's views and exports show.
#include <algorithm>

#include "captures/analysis_json_parts.h"
#include "captures/capture.h"
#include "captures/capture_layout.h"
#include "engine/analysis/hip_layer_means.h"
#include "engine/formats/errors.h"

namespace hipstudio::captures {

CapturedMethod captured_method(const hip::methods::MethodChoice& choice, const PairedAnalysis& a,
                               std::vector<LayerMaskViews> masks) {
  CapturedMethod m;
  m.choice = choice;
  m.side = a.hip;
  m.kl = a.kl;
  m.top1_agreement = a.top1_agreement;
  m.mask_refreshes = a.mask_refreshes;
  for (const LayerQuality& q : a.layers) m.quality.push_back(q.heads);
  m.masks = std::move(masks);
  for (LayerMaskViews& v : m.masks) v.method = choice.name;
  return m;
}

double method_mean(const CapturedMethod& m, const std::vector<LayerQuality>& layers, double HeadQuality::*field) {
  PairedAnalysis side;
  for (size_t l = 0; l < layers.size() && l < m.quality.size(); ++l) {
    LayerQuality q;
    q.layer = layers[l].layer;
    q.dense = layers[l].dense;
    q.heads = m.quality[l];
    side.layers.push_back(std::move(q));
  }
  return mean_over_hip_layers(side, field);
}

nlohmann::json method_summary_json(const CapturedMethod& m, const std::vector<LayerQuality>& layers) {
  return {{"ppl", number_json(m.side.ppl)},
          {"kl", number_json(m.kl)},
          {"top1_agreement", number_json(m.top1_agreement)},
          {"recall", number_json(method_mean(m, layers, &HeadQuality::recall))},
          {"mass", number_json(method_mean(m, layers, &HeadQuality::mass))},
          {"out_rel_err", number_json(method_mean(m, layers, &HeadQuality::out_rel_err))}};
}

const CapturedMethod* Capture::find_method(const std::string& name) const {
  for (const CapturedMethod& m : methods)
    if (m.choice.name == name) return &m;
  return nullptr;
}

std::vector<std::string> Capture::method_names() const {
  std::vector<std::string> names;
  for (const CapturedMethod& m : methods) names.push_back(m.choice.name);
  return names;
}

void require_method_held(const std::vector<std::string>& held, const std::string& name, const std::string& what) {
  if (std::find(held.begin(), held.end(), name) != held.end()) return;
  std::string list;
  for (const std::string& n : held) list += (list.empty() ? "" : ", ") + n;
  throw InputError(what + " holds no method '" + name + "'; it holds " + list + " (capture --methods chooses them)");
}

std::vector<std::string> manifest_method_names(const nlohmann::json& manifest) {
  std::vector<std::string> names;
  if (manifest.contains(layout::kMethods)) {
    for (const nlohmann::json& m : manifest.at(layout::kMethods)) names.push_back(m.at("name").get<std::string>());
  } else {
    names.push_back(manifest.at("params").at("selection").get<std::string>());
  }
  return names;
}

Capture capture_of_method(Capture c, const std::string& name) {
  require_method_held(c.method_names(), name, "the capture");
  const auto it = std::find_if(c.methods.begin(), c.methods.end(), [&](const CapturedMethod& m) { return m.choice.name == name; });
  std::rotate(c.methods.begin(), it, it + 1);  // the chosen one first, the others in their order
  const CapturedMethod& m = c.methods.front();
  PairedAnalysis& a = c.analysis;
  a.options.hip.method = m.choice;
  // The side's latency belongs to the run that measured it: the method's own.
  a.hip = m.side;
  a.kl = m.kl;
  a.top1_agreement = m.top1_agreement;
  for (size_t l = 0; l < a.layers.size() && l < m.quality.size(); ++l) a.layers[l].heads = m.quality[l];
  c.masks = m.masks;
  return c;
}

}  // namespace hipstudio::captures
