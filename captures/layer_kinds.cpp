#include "captures/layer_kinds.h"

#include <algorithm>
#include <utility>

namespace hipstudio::captures {

LayerKind LayerKinds::at(int64_t layer) const {
  return layer >= 0 && layer < layers() ? kind[static_cast<size_t>(layer)] : LayerKind::kHip;
}

std::string LayerKinds::text(int64_t layer) const {
  switch (at(layer)) {
    case LayerKind::kWindow: return "window " + std::to_string(window[static_cast<size_t>(layer)]) + " (dense on both sides)";
    case LayerKind::kDense: return "dense (under l_d)";
    case LayerKind::kHip: return "HiP";
  }
  return "HiP";
}

std::string LayerKinds::short_text(int64_t layer) const {
  switch (at(layer)) {
    case LayerKind::kWindow: return "window " + std::to_string(window[static_cast<size_t>(layer)]);
    case LayerKind::kHip: return "HiP";
    case LayerKind::kDense: return "dense";
  }
  return "HiP";
}

std::string LayerKinds::dense_layers_text() const {
  return "l_d " + std::to_string(dense_layers) + " of " + std::to_string(full_layers) + " full-attention layers";
}

std::string LayerKinds::summary() const {
  // Groups in order of first appearance of their text; each group's layers as ranges.
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  for (int64_t l = 0; l < layers(); ++l) {
    const std::string t = text(l);
    auto g = groups.begin();
    while (g != groups.end() && g->first != t) ++g;
    if (g == groups.end()) g = groups.insert(groups.end(), {t, {}});
    g->second.push_back(l);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const auto& x, const auto& y) { return (x.first == "HiP") > (y.first == "HiP"); });
  std::string s;
  for (const auto& [t, ls] : groups) {
    s += (s.empty() ? "" : "; ") + t + ": ";
    for (size_t i = 0; i < ls.size();) {
      size_t j = i;
      while (j + 1 < ls.size() && ls[j + 1] == ls[j] + 1) ++j;
      s += (i ? ", " : "") + std::to_string(ls[i]) + (j > i ? "-" + std::to_string(ls[j]) : "");
      i = j + 1;
    }
    if (t == "HiP") s += " (" + std::to_string(ls.size()) + " of " + std::to_string(layers()) + " layers)";
  }
  if (groups.empty() || groups.front().first != "HiP") s = "HiP: none" + (s.empty() ? "" : "; " + s);
  return s;
}

LayerKinds layer_kinds(const PairedAnalysis& a) {
  LayerKinds k;
  k.dense_layers = a.options.hip.dense_layers;
  k.full_layers = 0;
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const int64_t w = a.layers[l].math.window;
    k.window.push_back(w);
    k.full_layers += w == 0;
    if (!a.layers[l].dense) k.kind.push_back(LayerKind::kHip);
    else if (w > 0) k.kind.push_back(LayerKind::kWindow);
    else k.kind.push_back(LayerKind::kDense);
  }
  return k;
}

}  // namespace hipstudio::captures
