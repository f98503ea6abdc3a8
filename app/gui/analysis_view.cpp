// AnalysisView's lookups: a layer's views live in the analysis when the prefill computed them, in
// the deferred set when the worker computed them after it (results.h).
#include <algorithm>
#include <stdexcept>

#include "app/gui/results.h"
#include "engine/analysis/layer_view.h"
#include "kernels/shape_only_inputs.h"

namespace hipstudio::gui {

hip::AttentionInputs AnalysisView::inputs(int64_t layer) const {
  const LayerInputs* in = analysis->find_inputs(layer);
  if (!in) throw std::logic_error("the analysis kept no inputs of layer " + std::to_string(layer));
  return layer_view(*in);
}

bool AnalysisView::host_ready(int64_t layer) const {
  const LayerInputs* in = analysis->find_inputs(layer);
  return in && in->host_ready();
}

hip::AttentionInputs AnalysisView::shape(int64_t layer) const {
  const LayerInputs* in = analysis->find_inputs(layer);
  if (!in) throw std::logic_error("the analysis kept no inputs of layer " + std::to_string(layer));
  return hip::shape_only_inputs(in->heads, in->kv_heads, in->tokens, in->tokens, in->dim);
}

const LayerQuality* AnalysisView::layer_quality(int64_t layer) const {
  if (layer < 0 || layer >= static_cast<int64_t>(analysis->layers.size())) return nullptr;
  const LayerQuality& q = analysis->layers[static_cast<size_t>(layer)];
  if (!q.pending) return &q;
  if (deferred) {
    const auto it = deferred->find(layer);
    if (it != deferred->end()) return &it->second->quality;
  }
  return nullptr;
}

const LayerMaskViews* AnalysisView::layer_masks(int64_t layer) const {
  if (const LayerMaskViews* m = analysis->find_masks(layer)) return m;
  if (deferred) {
    const auto it = deferred->find(layer);
    if (it != deferred->end()) return &it->second->masks;
  }
  return nullptr;
}

std::vector<int64_t> AnalysisView::views_pending() const {
  std::vector<int64_t> layers;
  for (const LayerQuality& q : analysis->layers)
    if (!layer_quality(q.layer)) layers.push_back(q.layer);
  return layers;
}

std::shared_ptr<const PairedAnalysis> AnalysisView::with_deferred_views() const {
  if (!deferred || deferred->empty()) return analysis;
  auto merged = std::make_shared<PairedAnalysis>(*analysis);
  for (const auto& [layer, views] : *deferred) {
    merged->layers[static_cast<size_t>(layer)] = views->quality;
    if (analysis->find_inputs(layer)) merged->masks.push_back(views->masks);  // masks of kept layers, as a run keeps them
  }
  std::sort(merged->masks.begin(), merged->masks.end(),
            [](const LayerMaskViews& a, const LayerMaskViews& b) { return a.layer < b.layer; });
  return merged;
}

}  // namespace hipstudio::gui
